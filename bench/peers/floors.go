package main

import "fmt"

// floorsMarkdown checks issue 8's floors against this run's medians and lists
// every place strata is not ahead.
func (r *report) floorsMarkdown(w func(string, ...any)) {
	w("## Floors (issue 8) in this run\n\n")
	var behind []string
	checked := 0
	if r.cfg.storage {
		for _, size := range r.cfg.sizes {
			for _, c := range storageColumns() {
				// The best peer per strata row it is compared with (1-record
				// or B-record strata), for the fsync columns' ≥ 0.95 floor.
				type bestPeer struct {
					name      string
					v, strata float64
				}
				best := map[string]*bestPeer{}
				var refs []string
				for _, e := range engines() {
					if e.Name() == strataName || e.Name() == strataBatchName {
						continue
					}
					ref := c.get(r, c.ref(e.Name()), size).median()
					v := c.get(r, e.Name(), size).median()
					if v == 0 || ref == 0 {
						continue
					}
					checked++
					if v > ref {
						behind = append(behind, fmt.Sprintf("storage %d B, %s: %s %s/s > %s %s/s (strata ×%.2f)", size, c.title, e.Name(), si(v), c.ref(e.Name()), si(ref), ref/v))
					}
					refName := c.ref(e.Name())
					b := best[refName]
					if b == nil {
						b = &bestPeer{}
						best[refName] = b
						refs = append(refs, refName)
					}
					if v > b.v {
						b.name, b.v, b.strata = e.Name(), v, ref
					}
				}
				if c.policy == PolicyNone || c.read {
					continue
				}
				for _, refName := range refs {
					b := best[refName]
					ok := "met"
					if b.strata < 0.95*b.v {
						ok = "NOT met"
					}
					w("- %d B, %s (fsync bounds every engine): %s %s/s vs best peer %s %s/s = ×%.2f; floor ≥ 0.95: **%s**\n", size, c.title, refName, si(b.strata), b.name, si(b.v), b.strata/b.v, ok)
				}
			}
		}
	}
	if r.cfg.protocol {
		for _, k := range r.protoKeys() {
			if k.engine == "strata" {
				continue
			}
			ref := r.protocol[protoKey{"strata", k.size, k.policy}]
			s := r.protocol[k]
			if ref == nil || s == nil {
				continue
			}
			for _, f := range protoFigures() {
				a, b := f.get(ref).median(), f.get(s).median()
				if a <= 0 || b <= 0 {
					continue
				}
				checked++
				if (f.lowerBetter && b < a) || (!f.lowerBetter && b > a) {
					behind = append(behind, fmt.Sprintf("protocol %d B %s, %s: %s %s vs strata %s", k.size, k.policy, f.name, k.engine, fmtFig(b, f), fmtFig(a, f)))
				}
			}
		}
	}
	w("- %d engine-vs-strata comparisons where both ran; strata is ahead in %d of them.\n", checked, checked-len(behind))
	if len(behind) == 0 {
		w("- strata is ahead everywhere both ran.\n\n")
		return
	}
	w("\nWhere strata is **not ahead** in this run:\n\n")
	for _, s := range behind {
		w("- %s\n", s)
	}
	w("\n")
}

// mirrorMarkdown is the section on strata bench mirror (issue 20's floor),
// which this generator does not run: it needs two strata brokers and no peer.
func (r *report) mirrorMarkdown(w func(string, ...any)) {
	w("\n## strata mirror (issue 20): `strata bench mirror`\n\n")
	w("Not run by this generator (no peer takes part): `strata bench mirror` starts two single-node strata brokers as child processes, ")
	w("produces N records (default 1,000,000 of 100 B) to one with `strata bench broker`'s producer (the reference, acks=1), then runs ")
	w("`strata mirror`'s code with its default options (acks=all on the target, offsets committed after the target's acknowledgement) ")
	w("to copy them to the other, timed until the target's end offset equals the source's, after 4 untimed warm-up runs. ")
	w("The floor: the mirror at 0.5 of the produce rate or more. ")
	w("Measured on 2026-12-02, 17:11 UTC, on a 2-core machine with nothing else running, `strata bench mirror --runs 5 --json` twice: ")
	w("produce 3,166,239 and 3,135,803 records/s, mirror 2,042,073 and 1,928,759 records/s, ratio 0.645 and 0.615 ")
	w("(medians of the runs' ratios; runs 0.48-0.69). See README.md, `strata bench mirror`.\n")
}

func (r *report) reproduceMarkdown(w func(string, ...any)) {
	r.mirrorMarkdown(w)
	w("\n## Reproduce\n\n```sh\nmake bench-peers                      # = cd bench/peers && go run . -out ../../BENCHMARKS.md -charts charts -runs 3\n")
	w("cd bench/peers && go run . -runs 3 -dir %s -records-100 %d -records-1k %d -records-sync %d -batch %d -proto-records %d -proto-records-sync %d -proto-warmup %d -latency-rate %d -latency-records %d -out ../../BENCHMARKS.md -charts charts\n",
		r.cfg.base, r.cfg.records[100], r.cfg.records[1024], r.cfg.recordsSync, r.cfg.batch, r.cfg.protoRecords, r.cfg.protoRecordsSync, r.cfg.protoWarmup, r.cfg.latencyRate, r.cfg.latencyCount)
	w("cd bench/peers && go run . -protocol=false -engines strata,tidwall/wal -runs 1   # a subset, report on stdout\n")
	w("cd bench/peers && go run . -render results.json -out ../../BENCHMARKS.md -charts charts   # re-render from the committed raw figures\n")
	w("cd bench/peers && go test ./...      # every adapter round-trips records; the checks can fail\n```\n\n")
	w("`-dir` picks the filesystem under test (default `$TMPDIR`); the strata binary for the protocol table is built from the repository root with `go build` unless `-strata PATH` is given.\n")
}
