package tools

import (
	"io"
	"strings"
)

// table prints rows under a header as kafka-consumer-groups.sh does: every
// column but the last padded to its widest cell, one space between columns.
type table struct {
	rows [][]string
}

func newTable(header ...string) *table { return &table{rows: [][]string{header}} }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) error {
	width := make([]int, len(t.rows[0]))
	for _, r := range t.rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", width[i]-len(c)+1))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// dash is s, or "-" when s is empty (Kafka's mark for unknown).
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
