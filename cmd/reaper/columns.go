package main

import (
	"bufio"
	"encoding/json"
	"io"
	"iter"
	"strings"
	"unicode/utf8"
)

// This file owns how outputs too long to hold whole are written: aligned
// columns and JSON arrays written row by row. A status or a purge report
// of a root of a million tables is a million rows; text/tabwriter and
// json.Encoder would each hold all of them (and tabwriter a cell record
// per cell) before writing the first.

// columns aligns rows of cells as text/tabwriter.NewWriter(w, 0, 0, 2,
// ' ', 0) aligns a block of them: every cell but a row's last is padded
// with spaces to the width of the widest cell of its column (in runes)
// plus 2. fit measures a row, write writes one with the widths measured
// so far: measuring every row of a block before writing any gives
// tabwriter's output byte for byte.
type columns struct {
	widths []int
}

// fit widens the columns to hold cells.
func (c *columns) fit(cells []string) {
	for i, cell := range cells[:len(cells)-1] {
		if i == len(c.widths) {
			c.widths = append(c.widths, 0)
		}
		c.widths[i] = max(c.widths[i], utf8.RuneCountInString(cell)+2)
	}
}

// write writes one row.
func (c *columns) write(w *bufio.Writer, cells []string) {
	for i, cell := range cells[:len(cells)-1] {
		w.WriteString(cell)
		if pad := c.widths[i] - utf8.RuneCountInString(cell); pad > 0 {
			w.WriteString(strings.Repeat(" ", pad))
		}
	}
	w.WriteString(cells[len(cells)-1])
	w.WriteByte('\n')
}

// writeTable writes a block of rows aligned as one tabwriter block: the
// rows are yielded twice, once to measure, once to write.
func writeTable(w *bufio.Writer, rows iter.Seq[[]string]) {
	var c columns
	for r := range rows {
		c.fit(r)
	}
	for r := range rows {
		c.write(w, r)
	}
}

// jsonArray writes a JSON array element by element as json.Encoder with
// SetIndent(prefix, "  ") writes a slice at that depth: "[]" when empty.
type jsonArray struct {
	w      *bufio.Writer
	prefix string // the array's own indentation
	n      int
}

// add writes one element.
func (a *jsonArray) add(v any) error {
	b, err := json.MarshalIndent(v, a.prefix+"  ", "  ")
	if err != nil {
		return err
	}
	if a.n == 0 {
		a.w.WriteString("[\n")
	} else {
		a.w.WriteString(",\n")
	}
	a.w.WriteString(a.prefix + "  ")
	a.w.Write(b)
	a.n++
	return nil
}

// close ends the array.
func (a *jsonArray) close() {
	if a.n == 0 {
		a.w.WriteString("[]")
		return
	}
	a.w.WriteString("\n" + a.prefix + "]")
}

// writeJSONArray writes every value of seq as a JSON array indented at
// prefix.
func writeJSONArray[T any](w *bufio.Writer, prefix string, seq iter.Seq[T]) error {
	a := jsonArray{w: w, prefix: prefix}
	for v := range seq {
		if err := a.add(v); err != nil {
			return err
		}
	}
	a.close()
	return nil
}

// flushTo wraps w in a buffer for one output.
func flushTo(w io.Writer) *bufio.Writer { return bufio.NewWriterSize(w, 64<<10) }
