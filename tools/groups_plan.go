package tools

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// resetScenario is the one --to-*/--shift-by choice of --reset-offsets.
type resetScenario struct {
	kind   string       // "to-earliest", "to-latest", "to-current", "to-datetime", "to-offset", "shift-by", "from-file"
	n      int64        // the offset of to-offset, the delta of shift-by
	millis int64        // to-datetime (and by-duration, its special case), Unix milliseconds
	file   map[tp]int64 // from-file: the offset of each partition
}

// topicSpec is one --topic: a topic and maybe some of its partitions.
type topicSpec struct {
	topic      string
	partitions []int32 // nil: every partition
}

// resetRequest is a checked --reset-offsets command line.
type resetRequest struct {
	scenario  resetScenario
	topics    []topicSpec
	allTopics bool
	execute   bool
	export    bool // print the plan as CSV (topic,partition,offset), the --from-file format
}

// partitionOffsets is what the planner knows of one partition.
type partitionOffsets struct {
	Topic     string
	Partition int32
	Start     int64 // log start offset
	End       int64 // log end offset (high watermark)
	Committed int64 // the group's committed offset, -1 if none
	AtTime    int64 // to-datetime: first offset at or after the time, -1 if none
}

// plannedOffset is one row of the reset plan.
type plannedOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	NewOffset int64  `json:"new_offset"`
	// Clamped says the scenario asked for Requested, outside [log start,
	// log end], and NewOffset is the nearer end.
	Clamped   bool   `json:"clamped,omitempty"`
	Requested *int64 `json:"requested,omitempty"`
}

// planReset computes the new offset of every partition as Kafka's
// ConsumerGroupCommand does: earliest is the log start, latest the log end,
// current the committed offset (the log end if none), a datetime the first
// offset at or after it (the log end if none), to-offset
// and shift-by (from the committed offset, which must exist) are clamped into
// [log start, log end]. The plan is sorted by topic and partition.
func planReset(sc resetScenario, parts []partitionOffsets) ([]plannedOffset, error) {
	plan := make([]plannedOffset, 0, len(parts))
	for _, p := range parts {
		var want int64
		clamp := false
		switch sc.kind {
		case "to-earliest":
			want = p.Start
		case "to-latest":
			want = p.End
		case "to-current":
			want = p.Committed
			if want < 0 {
				want = p.End
			}
			clamp = true
		case "to-datetime":
			want = p.AtTime
			if want < 0 {
				want = p.End
			}
			clamp = true
		case "to-offset":
			want, clamp = sc.n, true
		case "from-file":
			o, ok := sc.file[tp{p.Topic, p.Partition}]
			if !ok {
				return nil, fmt.Errorf("%s-%d is not in the --from-file file", p.Topic, p.Partition)
			}
			want, clamp = o, true
		case "shift-by":
			if p.Committed < 0 {
				return nil, fmt.Errorf("cannot shift the offset of %s-%d: the group has no committed offset there", p.Topic, p.Partition)
			}
			want, clamp = p.Committed+sc.n, true
		default:
			return nil, fmt.Errorf("unknown reset scenario %q", sc.kind)
		}
		row := plannedOffset{Topic: p.Topic, Partition: p.Partition, NewOffset: want}
		if clamp && (want < p.Start || want > p.End) {
			row.NewOffset = min(max(want, p.Start), p.End)
			row.Clamped, row.Requested = true, &want
		}
		plan = append(plan, row)
	}
	sort.Slice(plan, func(i, j int) bool {
		if plan[i].Topic != plan[j].Topic {
			return plan[i].Topic < plan[j].Topic
		}
		return plan[i].Partition < plan[j].Partition
	})
	return plan, nil
}

// parseResetFlags checks the --reset-offsets flags.
func parseResetFlags(c *cli.Context) (*resetRequest, error) {
	req := &resetRequest{allTopics: c.Bool("all-topics"), execute: c.Bool("execute"), export: c.Bool("export")}
	if req.execute && c.Bool("dry-run") {
		return nil, usageErr("--dry-run and --execute: give at most one")
	}
	if req.export && c.Bool("json") {
		return nil, usageErr("--export and --json: give at most one")
	}
	for _, t := range c.Generic("topic").(*multiString).vals {
		ts, err := parseTopicSpec(t)
		if err != nil {
			return nil, err
		}
		req.topics = append(req.topics, ts)
	}
	if c.IsSet("from-file") {
		if req.allTopics || len(req.topics) > 0 {
			return nil, usageErr("--from-file names its partitions: no --topic or --all-topics with it")
		}
	} else if req.allTopics == (len(req.topics) > 0) {
		return nil, usageErr("--reset-offsets needs exactly one of --topic or --all-topics")
	}
	var kinds []string
	for _, k := range []string{"to-earliest", "to-latest", "to-current", "to-datetime", "by-duration", "to-offset", "shift-by", "from-file"} {
		if c.IsSet(k) {
			kinds = append(kinds, "--"+k)
			req.scenario.kind = k
		}
	}
	if len(kinds) != 1 {
		return nil, usageErr("--reset-offsets needs exactly one of --to-earliest, --to-latest, --to-current, --to-datetime, --by-duration, --to-offset, --shift-by, --from-file (got %d: %s)",
			len(kinds), strings.Join(kinds, " "))
	}
	switch req.scenario.kind {
	case "to-offset":
		req.scenario.n = c.Int64("to-offset")
	case "shift-by":
		req.scenario.n = c.Int64("shift-by")
	case "to-datetime":
		t, err := parseResetTime(c.String("to-datetime"), time.Local)
		if err != nil {
			return nil, err
		}
		req.scenario.millis = t.UnixMilli()
	case "by-duration":
		d, err := parseResetDuration(c.String("by-duration"))
		if err != nil {
			return nil, err
		}
		req.scenario.kind, req.scenario.millis = "to-datetime", time.Now().Add(-d).UnixMilli()
	case "from-file":
		b, err := os.ReadFile(c.String("from-file"))
		if err != nil {
			return nil, usageErr("--from-file: %v", err)
		}
		if req.scenario.file, err = parseOffsetsCSV(string(b), c.String("group")); err != nil {
			return nil, usageErr("--from-file %s: %v", c.String("from-file"), err)
		}
	}
	return req, nil
}

// parseTopicSpec parses "topic" or "topic:0,1,2".
func parseTopicSpec(s string) (topicSpec, error) {
	topic, ps, hasParts := strings.Cut(s, ":")
	if topic == "" {
		return topicSpec{}, usageErr("--topic %q: empty topic name", s)
	}
	ts := topicSpec{topic: topic}
	if !hasParts {
		return ts, nil
	}
	seen := map[int32]bool{}
	for _, f := range strings.Split(ps, ",") {
		p, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || p < 0 {
			return topicSpec{}, usageErr("--topic %q: %q is not a partition number", s, f)
		}
		if !seen[int32(p)] {
			seen[int32(p)] = true
			ts.partitions = append(ts.partitions, int32(p))
		}
	}
	return ts, nil
}

// parseResetTime parses Kafka's --to-datetime format, YYYY-MM-DDTHH:mm:SS.sss
// with an optional zone (Z, +01:00); without one it is in loc. The
// milliseconds may be left out.
func parseResetTime(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse("2006-01-02T15:04:05Z07:00", s); err == nil {
		return t, nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", s, loc)
	if err != nil {
		return time.Time{}, usageErr("--to-datetime %q: want YYYY-MM-DDTHH:mm:SS.sss, optionally with a zone (Z, +01:00)", s)
	}
	return t, nil
}

// parseResetDuration parses --by-duration: Kafka's ISO-8601 PnDTnHnMn.nS
// (P1D, PT30M, P1DT2H0.5S), or a Go duration (90m, 1h30m). It must not be
// negative.
func parseResetDuration(s string) (time.Duration, error) {
	bad := usageErr("--by-duration %q: want PnDTnHnMnS (PT1H, P1DT12H) or a duration like 90m", s)
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return 0, bad
		}
		return d, nil
	}
	rest, ok := strings.CutPrefix(strings.ToUpper(s), "P")
	if !ok || rest == "" || strings.HasSuffix(rest, "T") {
		return 0, bad
	}
	var d time.Duration
	inTime, seen := false, false
	for rest != "" {
		if rest[0] == 'T' {
			if inTime {
				return 0, bad
			}
			inTime, rest = true, rest[1:]
			continue
		}
		i := strings.IndexAny(rest, "DHMS")
		if i <= 0 {
			return 0, bad
		}
		v, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil || v < 0 {
			return 0, bad
		}
		unit := map[byte]time.Duration{'D': 24 * time.Hour, 'H': time.Hour, 'M': time.Minute, 'S': time.Second}[rest[i]]
		if (rest[i] == 'D') == inTime {
			return 0, bad // days before T, hours/minutes/seconds after it
		}
		d += time.Duration(v * float64(unit))
		seen, rest = true, rest[i+1:]
	}
	if !seen {
		return 0, bad
	}
	return d, nil
}

// parseOffsetsCSV reads the --export / --from-file format: one partition a
// line, "topic,partition,offset", or "group,topic,partition,offset" as
// Kafka writes for several groups (then only group's lines count). Blank
// lines and lines starting with # are skipped.
func parseOffsetsCSV(text, group string) (map[tp]int64, error) {
	out := map[tp]int64{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		for j := range f {
			f[j] = strings.TrimSpace(f[j])
		}
		if len(f) == 4 {
			if f[0] != group {
				continue
			}
			f = f[1:]
		}
		if len(f) != 3 || f[0] == "" {
			return nil, fmt.Errorf("line %d: %q is not topic,partition,offset", i+1, line)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 {
			return nil, fmt.Errorf("line %d: %q is not topic,partition,offset", i+1, line)
		}
		k := tp{f[0], int32(p)}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("line %d: %s-%d given twice", i+1, k.topic, k.part)
		}
		out[k] = o
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no offsets of group %s in it", group)
	}
	return out, nil
}
