/*
 * reaper.pml: a spin model of the safety protocol of docs/PROTOCOL.md (store
 * clock, fenced lease, purge commit, revive, hold, PAUSE). model/README.md
 * says what is modelled and how to run it; model/model_test.go runs it.
 *
 *   spin -a reaper.pml && gcc -O2 -DSAFETY -DCOLLAPSE -o pan pan.c && ./pan -m100000
 *   spin -DMARGIN=0 -DSKEW=0 -a reaper.pml ...     finds the counterexample
 *
 * Time is integer ticks. S is the store's clock. A ticker process advances S
 * by one tick at arbitrary moments, so any number of ticks may pass between
 * two steps of a process: that is how pauses (GC, SIGSTOP, a frozen VM) are
 * modelled. Each process also has its elapsed clock E = S + its own offset.
 */

/* ---- parameters (override with spin -DNAME=value) ----------------------- */
#ifndef TTL
#define TTL 6           /* the lease TTL */
#endif
#ifndef MARGIN
#define MARGIN 2        /* the holder's margin m: its deadline is sent_w + TTL - m */
#endif
#ifndef D
#define D 1             /* the request deadline d: a request lands within d of its send, or never (A1) */
#endif
#ifndef SKEW
#define SKEW 1          /* the takeover allowance skew: takeover when N >= LM + r + ttl + skew */
#endif
#ifndef R
#define R 1             /* the resolution r reaper rounds against in that rule */
#endif
#ifndef RES
#define RES R           /* world: by how much a store time as read may be truncated */
#endif
#ifndef STORE_SKEW
#define STORE_SKEW 1    /* world: how far ahead of S a store node's clock may be (A3) */
#endif
#ifndef FREEZE
#define FREEZE 0        /* world: ticks purger 1's elapsed clock may miss (breaks E's premise) */
#endif
#ifndef MAXT
#define MAXT 9          /* the last tick: bounds the search */
#endif
#ifndef NDATA
#define NDATA 1         /* data batches after the manifests batch */
#endif
#ifndef RENEWALS
#define RENEWALS 1      /* lease renewals per purge */
#endif
#ifndef OFF1            /* the elapsed-clock offsets of the three lease takers */
#define OFF1 17
#endif
#ifndef OFF2
#define OFF2 90
#endif
#ifndef OFF3
#define OFF3 37
#endif
#ifndef PROPS
#define PROPS 31        /* bit k-1 set: property k is asserted */
#endif
#ifndef HOLD_STRICT
#define HOLD_STRICT 0   /* 1: property 4 as FORMAT.md/PROTOCOL.md word it: no purge delete lands while a hold or PAUSE exists */
#endif

/* ---- the store ----------------------------------------------------------- */
byte S;                     /* the store's clock */

bool mk = true;             /* <name>.deleted present */
byte mkv = 1;               /* its version: ETag and bytes (a restore puts back the same bytes) */
byte nmv = 2;               /* the version the next drop writes */

bool lk;                    /* <name>.reaper-lock present */
byte lk_owner;              /* its owner (process id 1..3) */
byte lk_ver;                /* its ETag: a fresh nonce on every write */
byte lk_lm;                 /* its LastModified, stamped by a store node */
byte lk_ttl;                /* its ttl */
byte lk_gen;                /* its generation: bumped by every create and takeover */
byte nv = 1;                /* the next fresh lease ETag */

bool cm;                    /* <name>.reaper-purge present */
byte cmv;                   /* the marker version it names */

bool hold;                  /* <name>.reaper-hold present */
bool pause;                 /* _reaper/PAUSE present */

#define ALL ((1 << (NDATA + 1)) - 1)
byte tbl = ALL;             /* <name>.lance/: bit 0 the manifests, bits 1..NDATA the other data */

/* ---- ghosts and scratch -------------------------------------------------- */
byte hpgen;                 /* how many holds and PAUSEs were placed so far */

/* The properties, as named assertions. Each is set and asserted inside the
 * atomic step in which a request takes effect in the store. */
hidden byte p1_exclusion;               /* the stored lease is still the sender's holding */
hidden byte p2_no_delete_of_revived;    /* data goes only under a commit naming the present marker */
hidden byte p3_committed_not_revivable; /* revive deletes no marker beside a commit or without manifests */
hidden byte p4_hold_pause_respected;    /* no hold/PAUSE placed before the batch's guard */
hidden byte p5_marker_last;             /* a purge deletes the marker only once no data is left */
#define CHECK(k, p) assert(((PROPS >> (k - 1)) & 1) == 0 || p)

hidden byte e;              /* scratch, only used inside atomic steps */
hidden short n, rlm;        /* a contender's readings of N and LM, inside one atomic step */

/* ---- clocks -------------------------------------------------------------- */
#if FREEZE > 0
byte frz;                   /* ticks purger 1's elapsed clock missed */
#define E (S + off - (me == 1 -> frz : 0))
#else
#define E (S + off)         /* the process's elapsed clock: S plus a fixed offset of its own */
#endif

/* The ticker. Time passes only while a lease object exists: without one no
 * rule compares against a time from the past (takeover needs a lease; a
 * holder's fence and a request's flight only get more permissive when no time
 * passes), so dropping those ticks removes no behaviour that matters, only
 * copies of states shifted in time. */
active proctype Ticker()
{
end:
	do
	:: atomic { S < MAXT && lk -> S++ }
#if FREEZE > 0
	:: atomic { S < MAXT && lk && frz < FREEZE -> S++; frz++ }   /* purger 1's clock stood still */
#endif
	od
}

/* ---- requests ------------------------------------------------------------ */

/* A LastModified stamped now by a store node up to STORE_SKEW ahead of S. */
inline stamp()
{
	e = 0;
	do
	:: e < STORE_SKEW -> e++
	:: break
	od;
	lk_lm = S + e;
	e = 0
}

/* A1: a request sent at store time t0 lands at some store time in
 * [t0, t0 + d] (when its sender next moves, the ticker having advanced S
 * meanwhile), or, once S > t0 + d, never: its client gave up. A request lost
 * and retried is a pause followed by a send, and a request that landed but
 * whose response was lost is a landing followed by an idempotent retry, so
 * neither needs a branch of its own. */
#define IN_TIME   (S <= t0 + D)
#define TIMED_OUT (S > t0 + D)

/* The fence (PROTOCOL.md "The lease", Holder): a mutating request under the
 * lease is sent only while E <= sent_w + TTL - m. */
#define FENCE_OK (has && E <= sent + TTL - MARGIN)

/* Fence and send: one step (A2), or stop. t0 records the send. */
inline fence_send()
{
	if
	:: atomic { FENCE_OK -> t0 = S }
	:: else -> goto unlock
	fi
}

/* Property 1, asserted whenever a request sent under the lease lands. */
inline check_exclusion()
{
	p1_exclusion = (lk && lk_owner == me && lk_gen == gen);
	CHECK(1, p1_exclusion)
}

/* Property 4, for a purge delete: the batch ran a guard (ggen != NOGUARD),
 * and a hold or PAUSE present now was placed after that guard. */
#define NOGUARD 255
inline check_hold_pause()
{
#if HOLD_STRICT
	p4_hold_pause_respected = (ggen != NOGUARD && !(hold || pause));
#else
	p4_hold_pause_respected = (ggen != NOGUARD && (!(hold || pause) || hpgen > ggen));
#endif
	CHECK(4, p4_hold_pause_respected)
}

/* ---- the lease ----------------------------------------------------------- */

/* A lease write (create, takeover, renewal) by me lands now. */
inline lease_written()
{
	wv = nv;
	nv++;
	lk = true;
	lk_owner = me;
	lk_ver = wv;
	lk_ttl = TTL;
	stamp();
	ver = wv;
	sent = E;
	wv = 0
}

/* Take the lease (PROTOCOL.md "The lease"). No lease: create-if-absent. A
 * lease: read it (ETag, LastModified LM, ttl) and the store's time N, and
 * take it over only when N >= LM + r + ttl + skew, with a put-if-match on the
 * ETag read; else give up (skipped: locked). E is read (sent_w) just before
 * the send. Store times as read may be truncated by up to RES, N may come
 * from a node up to STORE_SKEW ahead of S, and the new LM is stamped by such
 * a node.
 *
 * Lease writes (here and in renew()) land at their send, in one step with
 * the reads: the worst case. A lease write landing later has a later LM for
 * the same sent_w, which only delays a takeover of it, and its writer waits
 * for its response anyway; one that never lands, or whose put-if-match
 * loses, is a process that does not get (or keep) the lease. A pause between
 * the reads and the send can only make the put-if-match fail, or equals
 * reading everything later. (A write whose response is lost and which the
 * verification later recognises by its token gives its writer the same
 * deadline, later: fewer behaviours than a plain success.) */
inline acquire()
{
	if
	:: !lk
	:: lk ->
		e = 0; do :: e < RES -> e++ :: break od;         /* LM as read: truncated */
		rlm = lk_lm - e;
		e = 0; do :: e < STORE_SKEW -> e++ :: break od;  /* N: from some node, */
		n = S + e;
		e = 0; do :: e < RES -> e++ :: break od;         /* truncated */
		n = n - e;
		e = 0;
		if
		:: n >= rlm + R + lk_ttl + SKEW -> n = 0; rlm = 0   /* expired by the store's clock */
		:: else -> n = 0; rlm = 0; goto done                /* skipped: locked */
		fi
	fi;
	lease_written();
	lk_gen++;
	has = true;
	gen = lk_gen
}

/* Renewal (optional at each call, at most RENEWALS per purge): put-if-match
 * on our last ETag; a conditional lease write, so not fenced. On success its
 * sent_w counts; a precondition failure means the lease is lost. */
inline renew()
{
	if
	:: has && nren < RENEWALS ->
		atomic {
			nren++;
			if
			:: lk && lk_ver == ver -> lease_written()
			:: else -> has = false; ver = 0; sent = 0
			fi
		}
	:: skip
	fi
}

/* Purge step 9, and the end of a revive: release, delete-if-match on our
 * ETag (conditional, so not fenced; landing later changes nothing). */
inline release()
{
	atomic {
		if
		:: has && lk && lk_ver == ver -> lk = false; lk_owner = 0; lk_ver = 0; lk_lm = 0; lk_ttl = 0
		:: else
		fi;
		has = false; ver = 0; sent = 0; gen = 0
	}
}

/* The guard (purge steps 4, 5, 8): {lease verified against the store (our
 * ETag), marker ETag unchanged, no hold, no PAUSE}, or stop. The four reads
 * are one step: between them only a hold or PAUSE could appear (the rest
 * needs the lease), and one appearing mid-guard counts as placed after it.
 * ggen is a ghost for property 4. */
inline guard()
{
	if
	:: atomic { has && lk && lk_ver == ver && mk && mkv == pv && !hold && !pause -> ggen = hpgen }
	:: else -> goto unlock
	fi
}

/* ---- purge (PROTOCOL.md "The purge", steps 1..9) ------------------------- */

proctype Purger(byte me; short off)
{
	bool has;           /* we may hold the lease */
	byte ver;           /* the ETag of our last successful lease write */
	short sent;         /* sent_w: E read just before sending that write */
	byte gen;           /* ghost: the generation of our holding */
	byte nren;          /* renewals so far */
	byte wv;            /* the ETag of a lease write */
	byte t0;            /* the store time of the send of the request in flight */
	byte pv;            /* the marker version planned on */
	byte keys;          /* the walk's keys */
	byte b;             /* the batch (or a stale commit's marker version) */
	byte ggen = NOGUARD;    /* ghost: hold/PAUSE placements seen by this batch's guard */

	/* 1. Plan (no lease): the marker is there (its validity and due-ness are
	 * policy, not modelled). 2. Take the lease; re-read the marker (same ETag
	 * and bytes) and the commit beside it. 3. Walk <name>.lance/ once (the
	 * identity fence is for writers outside the protocol, A4: not modelled).
	 * One step: without the lease only a drop (of an absent marker) or a hold
	 * changes any of these, and a marker that changed only stops the purge. */
	atomic {
		if
		:: mk -> pv = mkv
		:: else -> goto done
		fi;
		acquire();
		keys = tbl;
		if
		:: mk && mkv == pv && cm && cmv == pv -> b = 0; goto deleting  /* this marker's commit: finish it */
		:: mk && mkv == pv && cm && cmv != pv -> b = cmv               /* stale: another marker's */
		:: mk && mkv == pv && !cm -> b = 0                             /* none: a fresh purge */
		:: else -> keys = 0; goto unlock                               /* the marker changed: conflict */
		fi
	}
	if
	:: b != 0 ->
		/* 2. A stale commit: delete it and go on as a fresh purge.
		 * PROTOCOL.md names no guard here; the model runs one. */
		guard();
		fence_send();
		if
		:: atomic { IN_TIME -> check_exclusion(); check_hold_pause();
			if :: cm && cmv == b -> cm = false; cmv = 0 :: else fi;
			t0 = 0; b = 0; ggen = NOGUARD }
		:: atomic { TIMED_OUT -> t0 = 0 }; goto unlock
		fi
	:: else
	fi;

	/* 4. Guard, then write the commit (create-if-absent) naming the marker. */
	guard();
	fence_send();
	if
	:: atomic { IN_TIME -> check_exclusion();
		if :: !cm -> cm = true; cmv = pv :: else fi;
		t0 = 0; ggen = NOGUARD }
	:: atomic { TIMED_OUT -> t0 = 0 }; goto unlock
	fi;

	/* 5. Delete the manifests (batch 0) first, then the rest (batches
	 * 1..NDATA): the guard before each batch, the fence before each request.
	 * 6. Verify and 7. prune: inside the protocol nothing else appears. */
deleting:
	do
	:: b > NDATA -> break
	:: b <= NDATA && (keys & (1 << b)) == 0 -> b++
	:: b <= NDATA && (keys & (1 << b)) != 0 ->
		renew();
		guard();
		fence_send();
		if
		:: atomic { IN_TIME -> check_exclusion(); check_hold_pause();
			p2_no_delete_of_revived = (mk && mkv == pv && cm && cmv == pv);
			CHECK(2, p2_no_delete_of_revived);
			tbl = tbl & ~(1 << b);
			t0 = 0; ggen = NOGUARD; b++ }
		:: atomic { TIMED_OUT -> t0 = 0 }; goto unlock
		fi
	od;

	/* 8. Guard, delete the commit, then the marker last (delete-if-match on
	 * the ETag read under the lease), each request fenced. */
	atomic { b = 0; keys = 0 }
	guard();
	fence_send();
	if
	:: atomic { IN_TIME -> check_exclusion(); check_hold_pause(); cm = false; cmv = 0; t0 = 0 }
	:: atomic { TIMED_OUT -> t0 = 0 }; goto unlock
	fi;
	fence_send();
	if
	:: atomic { IN_TIME -> check_exclusion(); check_hold_pause();
		if
		:: mk && mkv == pv ->
			p5_marker_last = (tbl == 0 && !cm);
			CHECK(5, p5_marker_last);
			mk = false; mkv = 0
		:: else
		fi;
		t0 = 0; ggen = NOGUARD }
	:: atomic { TIMED_OUT -> t0 = 0 }; goto unlock
	fi;

	/* 9. Release the lease (delete-if-match). */
unlock:
	release();
done:
	atomic { has = false; ver = 0; sent = 0; gen = 0; nren = 0;
		t0 = 0; pv = 0; keys = 0; b = 0; ggen = NOGUARD }
}

/* ---- revive (PROTOCOL.md "Revive") --------------------------------------- */

proctype Reviver(byte me; short off)
{
	bool has;
	byte ver, gen, wv, t0;
	short sent;
	byte pv;            /* the marker version to revive */

	/* Read the marker and take the lease; under it re-read the marker (same
	 * ETag and bytes); refuse if a purge commit exists or the manifests are
	 * gone. (One step, as in the purge.) */
	atomic {
		if
		:: mk -> pv = mkv
		:: else -> goto done
		fi;
		acquire();
		if
		:: mk && mkv == pv && !cm && (tbl & 1) != 0
		:: else -> goto unlock
		fi
	}
	/* Delete the marker conditionally on its ETag, fenced. */
	fence_send();
	if
	:: atomic { IN_TIME -> check_exclusion();
		if
		:: mk && mkv == pv ->
			p3_committed_not_revivable = (!cm && (tbl & 1) != 0);
			CHECK(3, p3_committed_not_revivable);
			mk = false; mkv = 0
		:: else
		fi;
		t0 = 0 }
	:: atomic { TIMED_OUT -> t0 = 0 }; goto unlock
	fi;
	/* Read the commit once more: if one appeared, put the marker back (its
	 * original bytes, so the same ETag on S3), fenced, and fail. */
	if
	:: cm ->
		fence_send();
		if
		:: atomic { IN_TIME -> check_exclusion();
			if :: !mk -> mk = true; mkv = pv :: else fi;
			t0 = 0 }
		:: atomic { TIMED_OUT -> t0 = 0 }
		fi
	:: else
	fi;
unlock:
	release();
done:
	atomic { has = false; ver = 0; sent = 0; gen = 0; t0 = 0; pv = 0 }
}

/* ---- the rest of the world ----------------------------------------------- */

/* An operator places a legal hold or PAUSE at an arbitrary time, or not. */
proctype Operator()
{
	if
	:: atomic { hold = true; hpgen++ }
	:: atomic { pause = true; hpgen++ }
	:: skip
	fi
}

/* A drop after a revive (Lance or reaper drop: no lease): a new marker, with
 * new bytes, beside the live table. */
proctype Dropper()
{
end:
	atomic { !mk && (tbl & 1) != 0 -> mk = true; mkv = nmv; nmv++ }
}

init
{
	atomic {
		run Purger(1, OFF1);
		run Purger(2, OFF2);
		run Reviver(3, OFF3);
		run Operator();
		run Dropper()
	}
}
