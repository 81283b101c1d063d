package tools

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// benchCommand groups the benchmarks. Every one prints its figures beside the
// machine's own limits measured in the same run (limit_* in --json). MB means
// 10^6 bytes; figures are medians over --runs.
func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "benchmark the log on a disk, beside the disk's own limits",
		Subcommands: []*cli.Command{
			benchLogCommand(),
			benchCleanCommand(),
			benchRecoverCommand(),
			benchBrokerCommand(),
			benchClusterCommand(),
			benchMirrorCommand(),
		},
	}
}

// median of xs (xs is reordered).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// mbps is megabytes (10^6) per second.
func mbps(bytes int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(bytes) / 1e6 / secs
}

// writeJSON prints one JSON object on a line.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// newProgress returns a progress bar on stderr when it is a terminal, else nil.
// The nil bar's methods are no-ops (see progress).
func newProgress(w io.Writer, max int64, what string) *progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progress{bar: progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionClearOnFinish())}
}

// progress wraps a bar so a nil one does nothing.
type progress struct{ bar *progressbar.ProgressBar }

func (p *progress) add(n int64) {
	if p != nil {
		p.bar.Add64(n)
	}
}

func (p *progress) done() {
	if p != nil {
		p.bar.Finish()
	}
}
