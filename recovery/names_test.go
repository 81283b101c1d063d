package recovery

import (
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

func TestParsePartitionDir(t *testing.T) {
	for _, c := range []struct {
		name  string
		topic string
		part  int32
		ok    bool
	}{
		{"t-0", "t", 0, true},
		{"my-topic-12", "my-topic", 12, true},
		{"a.b_c-2147483647", "a.b_c", 2147483647, true},
		{"t-2147483648", "", 0, false},
		{"t--1", "t-", 1, true},
		{"t-", "", 0, false},
		{"-1", "", 0, false},
		{"t-1a", "", 0, false},
		{"t-0.0123456789abcdef0123456789abcdef-delete", "", 0, false},
		{"t-0.0123456789abcdef0123456789abcdef-future", "", 0, false},
		{"t-0.0123456789abcdef0123456789abcdef-stray", "", 0, false},
		{"bad topic-1", "", 0, false},
		{"recovery-point-offset-checkpoint", "", 0, false},
		{"meta.properties", "", 0, false},
	} {
		tp, ok := ParsePartitionDir(c.name)
		if ok != c.ok || ok && (tp.Topic != c.topic || tp.Partition != c.part) {
			t.Errorf("%q: %v %v, want %q %d %v", c.name, tp, ok, c.topic, c.part, c.ok)
		}
	}
}

// Only live partition directories are loaded: deletion, future and stray
// directories, files and other names are left alone.
func TestOnlyPartitionDirsLoaded(t *testing.T) {
	mem := vfs.NewMem()
	buildDataDir(t, mem, "/d", []string{"t-0", "u-3"}, 5)
	for _, d := range []string{"/d/t-1.0123456789abcdef0123456789abcdef-delete", "/d/t-2.0123456789abcdef0123456789abcdef-future",
		"/d/t-4.0123456789abcdef0123456789abcdef-stray", "/d/remote-log-index-cache", "/d/__cluster_metadata-x"} {
		if err := mem.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, mem, d+"/00000000000000000000.log", []byte("not a batch"))
	}
	writeFile(t, mem, "/d/v-1", []byte("a file"))
	d, rep, err := OpenDataDir("/d", testOpts(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if len(rep.Partitions) != 2 || rep.Partitions[0].Topic != "t" || rep.Partitions[1].Topic != "u" || rep.Partitions[1].Partition != 3 {
		t.Fatalf("partitions %+v", rep.Partitions)
	}
	if got := readFile(t, mem, "/d/t-1.0123456789abcdef0123456789abcdef-delete/00000000000000000000.log"); string(got) != "not a batch" {
		t.Fatal("a -delete directory was touched")
	}
}
