package main

import "strings"

// A section of the results file that one group of scenarios owns: a run of
// that group alone (--only) rewrites it and keeps the rest of the file, and
// a full run that did not measure the group keeps the section the file had.
type section struct{ begin, end string }

var (
	memoryMarks    = section{memBegin, memEnd}
	retentionMarks = section{retBegin, retEnd}
	retReadMarks   = section{retReadBegin, retReadEnd}
)

// splice puts text (the whole section, markers included) in place of doc's
// section, or before doc's "## Commands" heading, or at its end.
func (s section) splice(doc, text string) string {
	text = strings.TrimRight(text, "\n") + "\n"
	if i := strings.Index(doc, s.begin); i >= 0 {
		if j := strings.Index(doc[i:], s.end); j >= 0 {
			rest := doc[i+j+len(s.end):]
			return doc[:i] + text + strings.TrimPrefix(rest, "\n")
		}
	}
	if k := strings.Index(doc, "\n## Commands"); k >= 0 {
		return doc[:k+1] + text + "\n" + doc[k+1:]
	}
	return strings.TrimRight(doc, "\n") + "\n\n" + text
}

// of is doc's section, markers included ("" without one).
func (s section) of(doc string) string {
	i := strings.Index(doc, s.begin)
	if i < 0 {
		return ""
	}
	j := strings.Index(doc[i:], s.end)
	if j < 0 {
		return ""
	}
	return doc[i:i+j+len(s.end)] + "\n"
}
