package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// This file owns what a store-supplied string may look like in human-read
// output (tables, one-line reports, messages on stderr). Table names and
// object keys are whatever a store holds: a name with a newline, a tab or
// an escape sequence could otherwise forge a line of a report ("purged
// 999 objects") or a column. JSON output escapes on its own; logs go
// through slog, which quotes such values.

// displayName is a table name (or a root, a key) as one unambiguous token:
// as it is when it has only printable characters and no spaces, else
// Go-quoted, so "a\nb" shows as "a\nb" in quotes and never as two lines. A
// table in a namespace shows as the object id LanceDB knows it by
// ("tenant_a$inner"), not its directory.
func displayName(s string) string {
	s = reaper.ObjectID(s)
	if s != "" && plain(s) {
		return s
	}
	return strconv.Quote(s)
}

// plain reports whether s is valid UTF-8 made only of graphic characters
// other than spaces.
func plain(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// safeText keeps free text (an error, a reason) on its line: every control
// or invalid character is written as its Go escape, other text as it is.
func safeText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) }) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1: // not UTF-8: the byte
			q := strconv.Quote(s[:1])
			b.WriteString(q[1 : len(q)-1])
		case unicode.IsGraphic(r):
			b.WriteString(s[:size])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		s = s[size:]
	}
	return b.String()
}

// shellWord is s as one word of a POSIX shell command a user may paste: as
// it is when it holds only characters no shell reads specially, else in
// single quotes.
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@+,%", r)))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// jsonName is a table's name in JSON output, the object id LanceDB knows
// it by, and for a table in a namespace its directory (a location key
// beside the name; "" for a root table).
func jsonName(name string) (id, location string) {
	if lifecycle.IsNamespaced(name) {
		return reaper.ObjectID(name), name
	}
	return reaper.ObjectID(name), ""
}
