package server

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMetaPropertiesGarbage: a meta.properties that is garbage stops the
// start with a message naming the file and saying it cannot be read as
// meta.properties, not that it "holds node.id """; a wrong node.id keeps
// its own message.
func TestMetaPropertiesGarbage(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"garbage", "\x00\x17\xfe binary junk\nmore junk\n", []string{"is not a valid meta.properties", "no node.id"}},
		{"empty", "", []string{"is not a valid meta.properties", "no node.id"}},
		{"bad node.id", "version=1\ncluster.id=abc\nnode.id=seven\n", []string{"is not a valid meta.properties", `node.id "seven" is not a number`}},
		{"other node", "version=1\ncluster.id=abc\nnode.id=7\n", []string{"holds node.id 7, configured 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, MetaPropertiesFile)
			if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadConfig("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir}, nil)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Start(cfg, &Options{Logger: testLogger()})
			if err == nil {
				s.Close()
				t.Fatal("started on a bad meta.properties")
			}
			if !errors.Is(err, ErrDataDir) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name %s", err, p)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), `node.id ""`) {
				t.Errorf("error %q", err)
			}
		})
	}
}
