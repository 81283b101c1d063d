package tools

import (
	"os"
	"strings"
	"testing"
)

// TestRecoverPreallocated: the zero-filled tail a crash leaves in a segment
// written with preallocate=true is a zeroed tail to verify (exit 1); strata
// recover --preallocated cuts it as preallocated bytes trimmed, with no
// truncation, and the directory verifies clean afterwards. Without the flag
// it is a cut.
func TestRecoverPreallocated(t *testing.T) {
	for _, mode := range []string{"partition", "data_dir"} {
		t.Run(mode, func(t *testing.T) {
			p := makePartition(t)
			appendTo(t, p.logs[1], make([]byte, 64<<10))
			target := p.root
			if mode == "partition" {
				target = p.dir
			}
			out, _, code := run(t, "verify", target)
			if code != ExitProblems || !strings.Contains(out, "preallocated") {
				t.Fatalf("verify of the crashed preallocated %s: exit %d\n%s", mode, code, out)
			}
			plain, _, code := recoverJSON(t, "--dry-run", target)
			if code != ExitOK || plain["totals"].(map[string]any)["bytes_truncated"] != float64(64<<10) {
				t.Fatalf("dry run without --preallocated: exit %d %v", code, plain["totals"])
			}
			text, _, code := run(t, "recover", "--preallocated", target)
			if code != ExitOK || !strings.Contains(text, "65536 preallocated bytes trimmed") || strings.Contains(text, "cut ") {
				t.Fatalf("recover --preallocated: exit %d\n%s", code, text)
			}
			st, err := os.Stat(p.logs[1])
			if err != nil || st.Size() != p.sizes[1] {
				t.Fatalf("segment not trimmed to %d: %v %v", p.sizes[1], st.Size(), err)
			}
			if out, _, code := run(t, "verify", target); code != ExitOK {
				t.Fatalf("verify after recover: exit %d\n%s", code, out)
			}
			res, _, code := recoverJSON(t, "--preallocated", target)
			if code != ExitOK || res["changed"] != false {
				t.Fatalf("second run: exit %d %v", code, res)
			}
		})
	}
}
