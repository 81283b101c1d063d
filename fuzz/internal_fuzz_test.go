package fuzz

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/stratalog/strata/internal/checkpoint"
)

// FuzzCheckpoint parses arbitrary bytes as an offset checkpoint and as a
// leader-epoch checkpoint: parsing never panics, every error is ErrMalformed, and
// whatever parses formats to bytes that parse back to the same value and are a
// fixed point of format(parse(·)).
func FuzzCheckpoint(f *testing.F) {
	for _, s := range []string{
		"",
		"0\n0\n",
		"0\n2\nfoo 0 1234\nfoo 1 99\n",
		"0\n3\n0 0\n2 150\n5 4000\n",
		"0\r\n1\r\nfoo\t0  5 \r\n",
		"0\n1\nfoo 0 1\n\n",
		"1\n0\n",
		"0\n2\nfoo 0 1\n",
		"0\n1\nfoo -1 1\n",
		"0\n1\n__consumer_offsets 49 9223372036854775807\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := checkpoint.ParseOffsets(data)
		if err != nil {
			if !errors.Is(err, checkpoint.ErrMalformed) {
				t.Fatalf("offsets: error %v is not ErrMalformed", err)
			}
		} else {
			out, err := checkpoint.FormatOffsets(m)
			switch {
			case errors.Is(err, checkpoint.ErrInvalidTopic):
				// Readable but not a legal Kafka topic name: refused on write.
			case err != nil:
				t.Fatalf("offsets: format: %v", err)
			default:
				back, err := checkpoint.ParseOffsets(out)
				if err != nil || !maps.Equal(back, m) {
					t.Fatalf("offsets: round trip of %q: %v, %v", out, back, err)
				}
				again, _ := checkpoint.FormatOffsets(back)
				if !bytes.Equal(again, out) {
					t.Fatalf("offsets: format not canonical: %q vs %q", again, out)
				}
			}
		}

		es, err := checkpoint.ParseEpochs(data)
		if err != nil {
			if !errors.Is(err, checkpoint.ErrMalformed) {
				t.Fatalf("epochs: error %v is not ErrMalformed", err)
			}
			return
		}
		out := checkpoint.FormatEpochs(es)
		back, err := checkpoint.ParseEpochs(out)
		if err != nil || !slices.Equal(back, es) {
			t.Fatalf("epochs: round trip of %q: %v, %v", out, back, err)
		}
		if again := checkpoint.FormatEpochs(back); !bytes.Equal(again, out) {
			t.Fatalf("epochs: format not canonical")
		}
	})
}
