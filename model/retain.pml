/*
 * retain.pml: a spin model of version retention's record (docs/RETENTION.md,
 * "Deleting beside live writers", promise 4; issue 35 points 1 and 9): runs
 * interrupted at any step, a next run with another policy, the table dropped
 * and created again in between, and LanceDB writers tagging and restoring
 * mid-run. model/README.md says what is modelled and how to run it;
 * model/retain_test.go runs it.
 *
 *   spin -a retain.pml && gcc -O2 -DSAFETY -DCOLLAPSE -o pan pan.c && ./pan -m100000
 *   spin -DBLIND_RECORD=1 -a retain.pml ...   the old rule: finds the counterexample
 *   spin -DRECREATE_MIDRUN=1 -DKEY_ONLY_REFRESH=1 -a retain.pml ...   the old Refresh and Recheck
 *
 * Runs do not overlap: each holds the table's lease, and reaper.pml checks
 * that a holder's requests never land after a takeover. So one process plays
 * the runs one after another; a crash (a pause that never ends) ends a run at
 * any step and the next one starts. Writers do not take the lease: they
 * interleave with every step.
 */

/* ---- parameters (override with spin -DNAME=value) ----------------------- */
#ifndef BLIND_RECORD
#define BLIND_RECORD 0      /* 1: the old rule, a record is finished blindly (Recheck only) */
#endif
#ifndef POLICY_CLAUSE
#define POLICY_CLAUSE 1     /* 0: the new rule counts a recorded version the policy keeps */
#endif
#ifndef IDENTITY_CLAUSE
#define IDENTITY_CLAUSE 1   /* 0: the new rule counts a recorded version whose manifest is another one */
#endif
#ifndef NRUNS
#define NRUNS 3             /* retention runs, one after another */
#endif
#ifndef SAME_POLICY
#define SAME_POLICY 0       /* 1: every run has the same older_than, so no cutoff is before the last one */
#endif
#ifndef RECREATE
#define RECREATE 1          /* a LanceDB drop and create of the table, at most once, between runs */
#endif
#ifndef RECREATE_MIDRUN
#define RECREATE_MIDRUN 0   /* 1: ... or during a run, before its first recheck; 2: at any step of a run */
#endif
#ifndef WRITER
#define WRITER 1            /* tags and restores by a LanceDB writer */
#endif
#ifndef WSKEW
#define WSKEW 0             /* world: how far behind the store's clock a writer's clock may be */
#endif
#ifndef RACE
#define RACE 0              /* 1: the writer may also tag or restore, after the recheck, a version the run removes */
#endif
#ifndef KEY_ONLY_REFRESH
#define KEY_ONLY_REFRESH 0  /* 1: the old Refresh and Recheck: a manifest read before is reused by its key, and a
                             * planned version still listed stays removed whatever manifest is listed for it */
#endif
#ifndef REFRESH_SAME_OBJECT
#define REFRESH_SAME_OBJECT (1 - KEY_ONLY_REFRESH)  /* Refresh reuses a manifest only while it is listed as read */
#endif
#ifndef RECHECK_IDENTITY
#define RECHECK_IDENTITY (1 - KEY_ONLY_REFRESH)     /* Recheck keeps a listed version removed only while its manifest
                                                     * is the planned one, and not once the manifests were deleted */
#endif
#ifndef DELETE_UNLISTED
#define DELETE_UNLISTED 0   /* 0 (the code): the recheck before the manifests drops a planned version whose manifest
                             * is not listed (nothing of it to delete); 1: it stayed removed and its key was deleted
                             * all the same (the code before the model found it) */
#endif
#ifndef TAG_REREAD
#define TAG_REREAD 1        /* the tags read again before each manifest batch, a step before its delete;
                             * 0: only by the recheck (the old code); 2: atomically with the delete (no window) */
#endif

/* ---- the table ----------------------------------------------------------- */
#define NV 4                /* manifest keys _versions/1..4.manifest; bit k of a mask is version k */
#define NF 5                /* data files; bit f of a mask is file f */
#define FA 1                /* a, b, c: the first incarnation's files */
#define FB 2
#define FC 4
#define FD 8                /* d, e: the second incarnation's (data file names carry a uuid: */
#define FE 16               /* only manifest keys repeat across incarnations) */

#define BIT(k) (1 << (k))
#define HAS(m, k) ((((m) >> (k)) & 1) != 0)
/* printf arguments: a set of versions as "1-3-", of files as "a-c--" */
#define VS(m) (HAS(m, 1) -> '1' : '-'), (HAS(m, 2) -> '2' : '-'), (HAS(m, 3) -> '3' : '-'), (HAS(m, 4) -> '4' : '-')
#define FS(m) (HAS(m, 0) -> 'a' : '-'), (HAS(m, 1) -> 'b' : '-'), (HAS(m, 2) -> 'c' : '-'), (HAS(m, 3) -> 'd' : '-'), (HAS(m, 4) -> 'e' : '-')

byte vm;                    /* manifests listed (present) */
byte vinc[NV + 1];          /* the object at the key: its incarnation, i.e. its ETag and size */
byte vt[NV + 1];            /* the version's timestamp, by its writer's clock */
byte vlm[NV + 1];           /* the manifest's LastModified, by the store's clock */
byte vref[NV + 1];          /* the data files the version references */
byte tagm;                  /* versions a tag of main names */
byte fm;                    /* data files present */
byte inc = 1;               /* the table's incarnation */
byte clk = 3;               /* the store's clock: the last LastModified written */

/* ---- the record <name>.reaper-retain ------------------------------------- */
bool rp;                    /* present */
byte rvm;                   /* the versions it removes */
byte rinc[NV + 1];          /* each one's manifest identity (ETag and size) */
byte rcr;                   /* created_at, by the store's clock */
byte rcut;                  /* the cutoff of its policy */
byte rfm;                   /* the data files it deletes (all verified: see model/README.md) */

/* ---- ghosts and scratch -------------------------------------------------- */
byte ph;                    /* ghost: 0 no run has planned, 1 planned, 2 past its first recheck */
byte gcut;                  /* ghost: the cutoff of the running run's policy (the current policy) */

hidden byte r1_manifest_of_removed;     /* a manifest deleted is of a version the current policy removes */
hidden byte r2_no_file_of_listed;       /* a file deleted is referenced by no listed version */

hidden byte j, nw, us, ur, w;           /* scratch, only used inside atomic steps */

/* nw = the newest version listed (0: none). */
inline newest()
{
	nw = NV;
	do
	:: nw > 0 && !HAS(vm, nw) -> nw--
	:: else -> break
	od
}

/* The new rule's clauses, for a recorded version j still listed: its
 * manifest is the recorded one (same ETag and size, not written after the
 * record), and the current policy removes it (rem: a local of the Reaper). */
#if IDENTITY_CLAUSE
#define SAME_MANIFEST(j) (vinc[j] == rinc[j] && vlm[j] <= rcr)
#else
#define SAME_MANIFEST(j) true
#endif
#if POLICY_CLAUSE
#define POLICY_REMOVES(j) HAS(rem, j)
#else
#define POLICY_REMOVES(j) true
#endif

/* us = the files the versions left standing (listed, not in rem)
 * reference. */
inline standing_refs()
{
	us = 0;
	j = 1;
	do
	:: j > NV -> break
	:: j <= NV -> if :: HAS(vm, j) && !HAS(rem, j) -> us = us | vref[j] :: else fi; j++
	od;
	j = 0
}

/* us = the files the listed versions reference. */
inline listed_refs()
{
	us = 0;
	j = 1;
	do
	:: j > NV -> break
	:: j <= NV -> if :: HAS(vm, j) -> us = us | vref[j] :: else fi; j++
	od;
	j = 0
}

/* ---- the retention runs -------------------------------------------------- */

/* Recheck (retention.Recheck, on the table read again by
 * lance.Table.Refresh), md: manifestsDeleted. A planned version stays
 * removed while it is not the newest nor tagged, and, if its manifest is
 * still listed, while that manifest is the planned one (Removal.Is: same
 * key, size and LastModified) and the manifests are not deleted yet (after
 * them a version still listed stands); a planned file is deleted while no
 * version left standing references it. Refresh takes a manifest it has
 * read before from what it read, by its key, while it is listed as the
 * object it read (sameObject: same size and LastModified), and reads it
 * again otherwise. The size is not modelled: a manifest written again at a
 * key may well have the same size, so only LastModified (vlm) tells two
 * objects apart. With KEY_ONLY_REFRESH=1 the old Refresh (by key alone)
 * and the old Recheck (by version number alone). Used inside atomic steps
 * of the Reaper, on its locals. */
inline recheck(md)
{
	newest();
	rem = rem & ~BIT(nw) & ~tagm;
	us = 0;
	j = 1;
	do
	:: j > NV -> break
	:: j <= NV ->
		if
		:: HAS(vm, j) ->
#if RECHECK_IDENTITY
			if :: HAS(rem, j) && (md || vlm[j] != plm[j]) -> rem = rem & ~BIT(j) :: else fi;
#endif
#if REFRESH_SAME_OBJECT
			if :: !HAS(kn, j) || klm[j] != vlm[j] -> kref[j] = vref[j]; klm[j] = vlm[j] :: else fi;
#else
			if :: !HAS(kn, j) -> kref[j] = vref[j] :: else fi;
#endif
			if :: !HAS(rem, j) -> us = us | kref[j] :: else fi
		:: else ->
#if !DELETE_UNLISTED
			if :: !md -> rem = rem & ~BIT(j) :: else fi;
#endif
			kref[j] = 0; klm[j] = 0
		fi;
		if :: !HAS(rem, j) -> plm[j] = 0 :: else fi;
		j++
	od;
	j = 0;
	kn = vm; pf = pf & ~us;
	printf("@ run %d rechecks: removes versions %c%c%c%c, files %c%c%c%c%c\n", nrun + 1, VS(rem), FS(pf));
	nw = 0; us = 0
}

/* The delete of v k's manifest (its key: whatever object is there), in
 * the atomic step in which it lands, and r1 checked there. Used by the
 * Reaper, on its locals. */
inline delete_manifest()
{
	if
	:: HAS(vm, k) ->
		newest();
		printf("@ run %d deletes the manifest of v%d (incarnation %d, timestamp %d)\n", nrun + 1, k, vinc[k], vt[k]);
		r1_manifest_of_removed = (vt[k] < gcut && k != nw && !HAS(tagm, k));
		assert(r1_manifest_of_removed);
		vm = vm & ~BIT(k); vinc[k] = 0; vt[k] = 0; vlm[k] = 0; vref[k] = 0;
		nw = 0
	:: else
	fi
}

/* A crash: the run stops here for good and the next run starts. The
 * printf lines (@ ...) only show in a replayed trail; pan skips them. */
#define MAYCRASH(msg) if :: skip :: printf(msg, nrun + 1) -> goto stop fi

proctype Reaper()
{
	byte nrun;              /* runs so far */
	byte cut;               /* this run's cutoff: its policy, older_than from the store's clock now */
	byte pcut = 1;          /* the previous run's cutoff (SAME_POLICY) */
	byte rem;               /* the versions this run removes */
	byte pf;                /* the data files it deletes */
	byte plm[NV + 1];       /* the plan's Removal of each version it removes: its manifest's LastModified */
	byte kn;                /* the manifests it has read, by key (lance.Table.Refresh) */
	byte kref[NV + 1];      /* what it read in them */
	byte klm[NV + 1];       /* and their LastModified as listed then (REFRESH_SAME_OBJECT) */
	byte k;

	do
	:: nrun >= NRUNS -> break
	:: nrun < NRUNS ->
		MAYCRASH("@ run %d crashes before its plan\n");
		/* Take the lease, read the record and the table, plan the policy
		 * (retention.Compute): the versions older than the cutoff except
		 * the newest and the tagged ones, and the files only they
		 * reference. The reads are one step: a writer's commit is one put,
		 * seen by a listing or not. */
		atomic {
#if SAME_POLICY
			select(cut : pcut .. clk + 1);
#else
			select(cut : 1 .. clk + 1);
#endif
			gcut = cut; pcut = cut; ph = 1;
			newest();
			rem = 0; ur = 0; us = 0; kn = vm;
			j = 1;
			do
			:: j > NV -> break
			:: j <= NV ->
				kref[j] = vref[j];
#if REFRESH_SAME_OBJECT
				klm[j] = vlm[j];
#endif
				if
				:: HAS(vm, j) && vt[j] < cut && j != nw && !HAS(tagm, j) ->
					rem = rem | BIT(j); ur = ur | vref[j]
				:: HAS(vm, j) && !(vt[j] < cut && j != nw && !HAS(tagm, j)) ->
					us = us | vref[j]
				:: else
				fi;
				j++
			od;
			j = 0;
			pf = ur & ~us;
			printf("@ run %d plans with cutoff %d: removes versions %c%c%c%c, files %c%c%c%c%c\n", nrun + 1, cut, VS(rem), FS(pf));
			if
			:: rp ->
#if BLIND_RECORD
				/* The old rule: finish the record as it is. */
				rem = rvm; pf = rfm;
				printf("@ run %d finds a record (cutoff %d): finishes it as it is: versions %c%c%c%c, files %c%c%c%c%c\n", nrun + 1, rcut, VS(rem), FS(pf))
#else
				/* The new rule: of the record only what is still true. A
				 * recorded version counts only if its listed manifest is
				 * the recorded one (same ETag and size, not written after
				 * the record), it is older than the record's cutoff, and
				 * the policy removes it too. A recorded file counts if it
				 * is still there and no version left standing references
				 * it. */
				w = 0;
				j = 1;
				do
				:: j > NV -> break
				:: j <= NV ->
					if
					:: HAS(rvm, j) && HAS(vm, j) && vt[j] < rcut && SAME_MANIFEST(j) && POLICY_REMOVES(j) ->
						w = w | BIT(j)
					:: else
					fi;
					j++
				od;
				rem = rem | w;
				standing_refs();
				pf = (pf | (rfm & fm)) & ~us;
				j = 0; w = 0;
				printf("@ run %d finds a record (cutoff %d): adds what is still true: versions %c%c%c%c, files %c%c%c%c%c\n", nrun + 1, rcut, VS(rem), FS(pf))
#endif
			:: else
			fi;
#if RECHECK_IDENTITY
			/* The plan's removals, each with the manifest it names as
			 * listed now (the old rule's versions too: it checked no
			 * identity of them). */
			j = 1;
			do
			:: j > NV -> break
			:: j <= NV -> if :: HAS(rem, j) -> plm[j] = vlm[j] :: else fi; j++
			od;
			j = 0;
#endif
			nw = 0; ur = 0; us = 0
		}

		/* Write the record (create-if-absent, or compare-and-swap over the
		 * record found); the old rule finishes a record found as it is. A
		 * plan with nothing in it removes the record found, if any. */
		MAYCRASH("@ run %d crashes before writing its record\n");
		atomic {
			if
			:: rem == 0 && pf == 0 ->
				printf("@ run %d has nothing to do\n", nrun + 1);
				rp = false; rvm = 0; rcr = 0; rcut = 0; rfm = 0;
				rinc[1] = 0; rinc[2] = 0; rinc[3] = 0; rinc[4] = 0;
				goto stop
			:: else
			fi;
			if
			:: BLIND_RECORD && rp
			:: else ->
				printf("@ run %d writes its record: versions %c%c%c%c, files %c%c%c%c%c\n", nrun + 1, VS(rem), FS(pf));
				rp = true; rvm = rem; rcr = clk; rcut = cut; rfm = pf;
				j = 1;
				do
				:: j > NV -> break
				:: j <= NV -> if :: HAS(rem, j) -> rinc[j] = vinc[j] :: else -> rinc[j] = 0 fi; j++
				od;
				j = 0
			fi
		}

		/* Recheck before the manifests. */
		MAYCRASH("@ run %d crashes before its first recheck\n");
		atomic { recheck(false); ph = 2 }

		/* The removed versions' manifests, oldest first, one per batch.
		 * Before each batch the run reads the tags again
		 * (untaggedManifests, the batch deleter's filter): a version
		 * tagged since keeps its manifest, and the recheck after the
		 * manifests finds it tagged. The read is made once the batch has
		 * its slot, just before the delete is sent, but it is a request
		 * of its own: a tag committed between the two is not seen. */
		k = 1;
		do
		:: k > NV -> break
		:: k <= NV && !HAS(rem, k) -> k++
		:: k <= NV && HAS(rem, k) ->
			MAYCRASH("@ run %d crashes before a manifest delete\n");
#if TAG_REREAD == 1
			if
			:: atomic { HAS(tagm, k) ->
				printf("@ run %d reads the tags again: v%d is tagged, its manifest stays\n", nrun + 1, k);
				k++ }
			:: atomic { !HAS(tagm, k) ->
				printf("@ run %d reads the tags again: v%d is not tagged\n", nrun + 1, k) };
				atomic { delete_manifest(); k++ }
			fi
#elif TAG_REREAD == 2
			atomic {
				if
				:: HAS(tagm, k) ->
					printf("@ run %d reads the tags again: v%d is tagged, its manifest stays\n", nrun + 1, k)
				:: else -> delete_manifest()
				fi;
				k++
			}
#else
			atomic { delete_manifest(); k++ }
#endif
		od;

		/* Recheck again, then the files, one per batch. */
		MAYCRASH("@ run %d crashes before its second recheck\n");
		atomic { recheck(true) }
		k = 0;
		do
		:: k >= NF -> break
		:: k < NF && !HAS(pf, k) -> k++
		:: k < NF && HAS(pf, k) ->
			MAYCRASH("@ run %d crashes before a file delete\n");
			atomic {
				if
				:: HAS(fm, k) ->
					listed_refs();
					printf("@ run %d deletes file %c\n", nrun + 1, 'a' + k);
					r2_no_file_of_listed = !HAS(us, k);
					assert(r2_no_file_of_listed);
					fm = fm & ~BIT(k);
					us = 0
				:: else
				fi;
				k++
			}
		od;

		/* The record last. */
		MAYCRASH("@ run %d crashes before deleting its record\n");
		atomic {
			printf("@ run %d deletes its record\n", nrun + 1);
			rp = false; rvm = 0; rcr = 0; rcut = 0; rfm = 0;
			rinc[1] = 0; rinc[2] = 0; rinc[3] = 0; rinc[4] = 0
		}
stop:
		/* The run is over, finished or crashed: the next one starts. */
		atomic {
			nrun++; ph = 0; gcut = 0; cut = 0; rem = 0; pf = 0; kn = 0; k = 0;
			kref[1] = 0; kref[2] = 0; kref[3] = 0; kref[4] = 0;
			klm[1] = 0; klm[2] = 0; klm[3] = 0; klm[4] = 0;
			plm[1] = 0; plm[2] = 0; plm[3] = 0; plm[4] = 0
		}
	od
}

/* ---- LanceDB writers (no lease) ------------------------------------------ */

/* A writer may tag or restore v now. After a run's first recheck only a
 * version its policy keeps (newer than the cutoff, the newest, or tagged):
 * restoring or tagging an older one races any cleanup, Lance's own too
 * (RETENTION.md, "Restoring an old version races any cleanup, by design").
 * RACE=1 lifts that: the run then reads the tags again before each
 * manifest batch (TAG_REREAD), and what is left is the window between that
 * read and the delete. A tag is made only on a listed version: one made on
 * a version whose manifest is gone (Lance checks, then writes the tag) is
 * the run's danglingTags warning, not modelled. */
#define ALLOWED(v) (RACE || ph < 2 || vt[v] >= gcut || v == nw || HAS(tagm, v))

#if RECREATE_MIDRUN == 2
#define RECREATE_OK true
#elif RECREATE_MIDRUN
#define RECREATE_OK (ph < 2)
#else
#define RECREATE_OK (ph == 0)
#endif

proctype Writer()
{
	byte v;
end:
	do
	/* Tag a listed version (a tag of main). */
	:: atomic { WRITER ->
		select(v : 1 .. NV);
		newest();
		if
		:: HAS(vm, v) && !HAS(tagm, v) && ALLOWED(v) ->
			printf("@ a writer tags v%d\n", v);
			tagm = tagm | BIT(v)
		:: else
		fi;
		nw = 0; v = 0 }
	/* checkout(v) + restore(): a new version, the newest, referencing v's
	 * files. */
	:: atomic { WRITER ->
		select(v : 1 .. NV);
		newest();
		if
		:: HAS(vm, v) && nw < NV && ALLOWED(v) ->
			clk++;
			select(w : 0 .. WSKEW);
			printf("@ a writer restores v%d: v%d (timestamp %d, LastModified %d)\n", v, nw + 1, clk - w, clk);
			vm = vm | BIT(nw + 1); vinc[nw + 1] = inc; vt[nw + 1] = clk - w; vlm[nw + 1] = clk; vref[nw + 1] = vref[v];
			w = 0
		:: else
		fi;
		nw = 0; v = 0 }
	/* Drop the table (its directory, tags included) and create it again:
	 * a new incarnation, versions 1 and 2 at the same keys, written now,
	 * with files of their own. The record beside the table stays. */
	:: atomic { RECREATE && inc == 1 && RECREATE_OK ->
		select(w : 0 .. WSKEW);
		printf("@ LanceDB drops the table and creates it again: v1, v2 (timestamps %d, %d, LastModified %d, %d)\n", clk + 1 - w, clk + 2 - w, clk + 1, clk + 2);
		inc = 2; tagm = 0;
		vm = BIT(1) | BIT(2); fm = FD | FE;
		vinc[1] = 2; vt[1] = clk + 1 - w; vlm[1] = clk + 1; vref[1] = FD;
		vinc[2] = 2; vt[2] = clk + 2 - w; vlm[2] = clk + 2; vref[2] = FD | FE;
		vinc[3] = 0; vt[3] = 0; vlm[3] = 0; vref[3] = 0;
		vinc[4] = 0; vt[4] = 0; vlm[4] = 0; vref[4] = 0;
		clk = clk + 2; w = 0 }
	od
}

init
{
	atomic {
		/* Three versions: v1 wrote a, v2 appended b, v3 rewrote a into c
		 * (a delete or a compaction). */
		vm = BIT(1) | BIT(2) | BIT(3); fm = FA | FB | FC;
		vinc[1] = 1; vt[1] = 1; vlm[1] = 1; vref[1] = FA;
		vinc[2] = 1; vt[2] = 2; vlm[2] = 2; vref[2] = FA | FB;
		vinc[3] = 1; vt[3] = 3; vlm[3] = 3; vref[3] = FB | FC;
		run Reaper();
		run Writer()
	}
}
