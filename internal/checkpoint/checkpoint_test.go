package checkpoint_test

import (
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
)

type tp = checkpoint.TopicPartition

func TestGoldenOffsets(t *testing.T) {
	const golden = "0\n2\nfoo 0 1234\nfoo 1 99\n"
	m := map[tp]int64{{"foo", 1}: 99, {"foo", 0}: 1234}
	got, err := checkpoint.FormatOffsets(m)
	if err != nil || string(got) != golden {
		t.Fatalf("FormatOffsets = %q, %v", got, err)
	}
	back, err := checkpoint.ParseOffsets([]byte(golden))
	if err != nil || !maps.Equal(back, m) {
		t.Fatalf("ParseOffsets = %v, %v", back, err)
	}
	// Sorted by topic, then numerically by partition.
	m = map[tp]int64{{"b", 10}: 1, {"b", 9}: 2, {"a", 2}: 3, {"__consumer_offsets", 0}: 0}
	got, _ = checkpoint.FormatOffsets(m)
	if want := "0\n4\n__consumer_offsets 0 0\na 2 3\nb 9 2\nb 10 1\n"; string(got) != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if got, _ := checkpoint.FormatOffsets(nil); string(got) != "0\n0\n" {
		t.Fatalf("empty: %q", got)
	}
}

func TestGoldenEpochs(t *testing.T) {
	const golden = "0\n3\n0 0\n2 150\n5 4000\n"
	es := []checkpoint.EpochEntry{{0, 0}, {2, 150}, {5, 4000}}
	if got := checkpoint.FormatEpochs(es); string(got) != golden {
		t.Fatalf("FormatEpochs = %q", got)
	}
	back, err := checkpoint.ParseEpochs([]byte(golden))
	if err != nil || !slices.Equal(back, es) {
		t.Fatalf("ParseEpochs = %v, %v", back, err)
	}
}

// TestParseJavaCompat: what Kafka's reader accepts, this one accepts.
func TestParseJavaCompat(t *testing.T) {
	for _, in := range []string{
		"",                         // empty file: empty checkpoint
		"0\r\n1\r\nfoo 0 5\r\n",    // CRLF
		"0\r1\rfoo 0 5",            // CR, no final newline
		"0\n1\nfoo\t0  5 \n",       // tabs, runs, trailing space
		"0\n1\nfoo +0 +5\n",        // signs, as Integer.parseInt
		"0\n2\nfoo 0 1\nfoo 0 5\n", // repeated: last wins
		"0\n1\nfoo 0 5",            // no final newline
		"0\n1\nfoo\x0b0\f5\n",      // \v and \f are whitespace
		"0\n1\nfoo 000 0005\n",     // leading zeros
		"0\n1\nfoo 0 9223372036854775807\n",
	} {
		m, err := checkpoint.ParseOffsets([]byte(in))
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if in == "" || strings.Contains(in, "922") {
			continue
		}
		if !maps.Equal(m, map[tp]int64{{"foo", 0}: 5}) {
			t.Errorf("%q: %v", in, m)
		}
	}
}

func TestParseMalformed(t *testing.T) {
	for _, c := range []struct {
		in   string
		line int
		msg  string
	}{
		{"1\n0\n", 1, "unsupported version 1"},
		{"x\n0\n", 1, "version"},
		{" 0\n0\n", 1, "version"},
		{"0\n", 0, "missing entry count"},
		{"0\n-1\n", 2, "entry count"},
		{"0\nabc\n", 2, "entry count"},
		{"0\n2\nfoo 0 1\n", 0, "expected 2 entries, found 1"},
		{"0\n1\nfoo 0 1\nbar 0 2\n", 4, "found more"},
		{"0\n1\nfoo 0 1\n\n", 4, "found more"},
		{"0\n0\n\n", 3, "found more"},
		{"0\n1\nfoo 0\n", 3, "found 2 fields"},
		{"0\n1\nfoo 0 1 2\n", 3, "found 4 fields"},
		{"0\n1\n foo 0 1\n", 3, "found 4 fields"},
		{"0\n1\nfoo x 1\n", 3, "partition \"x\""},
		{"0\n1\nfoo -1 1\n", 3, "negative partition"},
		{"0\n1\nfoo 2147483648 1\n", 3, "partition"},
		{"0\n1\nfoo 0 9223372036854775808\n", 3, "offset"},
		{"0\n1\nfoo 0 1.5\n", 3, "offset"},
		{"0\n2\nfoo 0 1\nbar 0\n", 4, "fields"},
	} {
		_, err := checkpoint.ParseOffsets([]byte(c.in))
		var pe *checkpoint.ParseError
		if !errors.Is(err, checkpoint.ErrMalformed) || !errors.As(err, &pe) {
			t.Errorf("%q: err %v", c.in, err)
			continue
		}
		if pe.Line != c.line || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: line %d, %q; want line %d, %q", c.in, pe.Line, err, c.line, c.msg)
		}
		if !strings.HasPrefix(err.Error(), "checkpoint: malformed checkpoint: ") {
			t.Errorf("%q: message %q", c.in, err)
		}
	}
	for _, in := range []string{"0\n1\n5\n", "0\n1\n1 2 3\n", "0\n1\nx 1\n", "0\n1\n1 x\n", "0\n1\n2147483648 0\n", "0\n0\n1 2\n"} {
		if _, err := checkpoint.ParseEpochs([]byte(in)); !errors.Is(err, checkpoint.ErrMalformed) {
			t.Errorf("epochs %q: %v", in, err)
		}
	}
}

func TestWriteRejectsBadNames(t *testing.T) {
	for _, name := range []string{"", "a b", "a\tb", "a\nb", ".", "..", "ü", strings.Repeat("a", 250), "a/b"} {
		_, err := checkpoint.FormatOffsets(map[tp]int64{{name, 0}: 1})
		if !errors.Is(err, checkpoint.ErrInvalidTopic) {
			t.Errorf("%q: %v", name, err)
		}
	}
	if _, err := checkpoint.FormatOffsets(map[tp]int64{{strings.Repeat("a", 249), 0}: 1}); err != nil {
		t.Error(err)
	}
	if _, err := checkpoint.FormatOffsets(map[tp]int64{{"a", -1}: 1}); !errors.Is(err, checkpoint.ErrInvalidPartition) {
		t.Error(err)
	}
	m := vfs.NewMem()
	if err := checkpoint.WriteOffsets(m, "/c", map[tp]int64{{"a b", 0}: 1}); !errors.Is(err, checkpoint.ErrInvalidTopic) {
		t.Fatal(err)
	}
	if names, _ := m.ReadDir("/"); len(names) != 0 {
		t.Fatalf("a refused write left %v", names)
	}
}

func TestFiles(t *testing.T) {
	for _, c := range []struct {
		name string
		fsys vfs.FS
		dir  string
	}{{"OS", vfs.OS, t.TempDir()}, {"Mem", vfs.NewMem(), "/"}} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(c.dir, checkpoint.RecoveryPointFile)
			if _, err := checkpoint.ReadOffsets(c.fsys, p); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("missing file: %v", err)
			}
			m := map[tp]int64{{"t", 0}: 7, {"t", 1}: 8}
			if err := checkpoint.WriteOffsets(c.fsys, p, m); err != nil {
				t.Fatal(err)
			}
			got, err := checkpoint.ReadOffsets(c.fsys, p)
			if err != nil || !maps.Equal(got, m) {
				t.Fatalf("%v %v", got, err)
			}
			if names, _ := c.fsys.ReadDir(c.dir); !slices.Equal(names, []string{checkpoint.RecoveryPointFile}) {
				t.Fatalf("dir holds %v", names)
			}
			ep := filepath.Join(c.dir, checkpoint.LeaderEpochFile)
			es := []checkpoint.EpochEntry{{1, 0}, {3, 10}}
			if err := checkpoint.WriteEpochs(c.fsys, ep, es); err != nil {
				t.Fatal(err)
			}
			if got, err := checkpoint.ReadEpochs(c.fsys, ep); err != nil || !slices.Equal(got, es) {
				t.Fatalf("%v %v", got, err)
			}
			// A malformed file names itself and the line.
			f, _ := c.fsys.Create(p)
			f.Write([]byte("0\n1\nt 0\n"))
			f.Close()
			_, err = checkpoint.ReadOffsets(c.fsys, p)
			if !errors.Is(err, checkpoint.ErrMalformed) || !strings.Contains(err.Error(), p+": checkpoint: malformed checkpoint: line 3") {
				t.Fatalf("%v", err)
			}
		})
	}
}

// TestWriteCrash: a crash anywhere during WriteOffsets leaves the old or the new
// checkpoint, both parseable.
func TestWriteCrash(t *testing.T) {
	old := map[tp]int64{{"t", 0}: 1}
	next := map[tp]int64{{"t", 0}: 100, {"t", 1}: 200}
	setup := func() *vfs.MemFS {
		m := vfs.NewMem()
		if err := checkpoint.WriteOffsets(m, "/cp", old); err != nil {
			t.Fatal(err)
		}
		return m
	}
	c := vfs.NewCounter(vfs.MutatingOps...)
	if err := checkpoint.WriteOffsets(vfs.Inject(setup(), c), "/cp", next); err != nil {
		t.Fatal(err)
	}
	for k := 0; k <= c.Count(); k++ {
		m := setup()
		_ = checkpoint.WriteOffsets(vfs.Inject(m, vfs.CrashAt(k, vfs.MutatingOps...)), "/cp", next)
		for desc, s := range m.AllCrashStates(vfs.CrashOptions{}) {
			got, err := checkpoint.ReadOffsets(s, "/cp")
			if err != nil || !maps.Equal(got, old) && !maps.Equal(got, next) {
				t.Fatalf("k=%d %s: %v %v", k, desc, got, err)
			}
		}
	}
}

// TestMalformedQuotesShortPrefix: garbage in a checkpoint is reported with a
// short escaped prefix of the bad line, never the whole line or raw bytes
// (the message goes into a log line).
func TestMalformedQuotesShortPrefix(t *testing.T) {
	junk := make([]byte, 1<<20)
	for i := range junk {
		junk[i] = byte(i*7 + i>>8) // control bytes, invalid UTF-8, no newline
		if junk[i] == '\n' || junk[i] == '\r' {
			junk[i] = 0
		}
	}
	long := strings.Repeat("x", 100000)
	for _, in := range []string{
		string(junk),
		"0\n" + string(junk),
		"0\n1\n" + string(junk),
		"0\n1\nfoo 0 " + long + "\n",
		"0\n0\n" + long + "\n",
	} {
		_, err := checkpoint.ParseOffsets([]byte(in))
		if !errors.Is(err, checkpoint.ErrMalformed) {
			t.Fatalf("%.20q...: %v", in, err)
		}
		msg := err.Error()
		if len(msg) > 250 {
			t.Errorf("message of %d bytes: %.300s", len(msg), msg)
		}
		for _, c := range []byte(msg) {
			if c < 0x20 || c >= 0x7f {
				t.Errorf("message holds raw byte %#x: %.300q", c, msg)
				break
			}
		}
		if !strings.Contains(msg, " bytes)") {
			t.Errorf("message does not say how long the bad line was: %s", msg)
		}
	}
	_, err := checkpoint.FormatOffsets(map[tp]int64{{strings.Repeat("\x01", 5000), 0}: 1})
	if !errors.Is(err, checkpoint.ErrInvalidTopic) || len(err.Error()) > 250 {
		t.Errorf("invalid topic: %d bytes: %.300s", len(err.Error()), err)
	}
}
