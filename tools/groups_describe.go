package tools

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// groupView is everything --describe shows of one group (and its JSON).
type groupView struct {
	Group        string         `json:"group"`
	State        string         `json:"state"`
	ProtocolType string         `json:"protocol_type"`
	Protocol     string         `json:"assignment_strategy"`
	Coordinator  string         `json:"coordinator"`
	Members      []memberView   `json:"members"`
	Partitions   []partitionLag `json:"partitions"`
}

type memberView struct {
	ConsumerID string             `json:"consumer_id"`
	InstanceID string             `json:"instance_id,omitempty"`
	Host       string             `json:"host"`
	ClientID   string             `json:"client_id"`
	Assignment map[string][]int32 `json:"assignment"`
}

// partitionLag is one row of --describe; nil offsets are unknown ("-").
type partitionLag struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	CurrentOffset *int64 `json:"current_offset"`
	LogEndOffset  *int64 `json:"log_end_offset"`
	Lag           *int64 `json:"lag"`
	ConsumerID    string `json:"consumer_id"`
	Host          string `json:"host"`
	ClientID      string `json:"client_id"`
}

// tp names a partition.
type tp struct {
	topic string
	part  int32
}

// describeGroup returns the group as its coordinator describes it; a group
// the coordinator does not know is refused (exit 1).
func (r *groupsRun) describeGroup(ctx context.Context) (kadm.DescribedGroup, error) {
	dg, err := r.adm.DescribeGroups(ctx, r.group)
	if err != nil {
		return kadm.DescribedGroup{}, brokerErr("describe group "+r.group, err)
	}
	g, ok := dg[r.group]
	switch {
	case !ok:
		return g, failErr(fmt.Errorf("describe group %s: the broker's answer does not name the group", r.group))
	case errors.Is(g.Err, kerr.GroupIDNotFound), g.Err == nil && g.State == "Dead":
		return g, refused("Consumer group '%s' does not exist.", r.group)
	case g.Err != nil:
		return g, brokerErr("describe group "+r.group, g.Err)
	}
	return g, nil
}

// groupView gathers the group, its committed offsets and the log end
// offsets of every partition it has committed to or been assigned.
func (r *groupsRun) groupView(ctx context.Context) (*groupView, error) {
	g, err := r.describeGroup(ctx)
	if err != nil {
		return nil, err
	}
	v := &groupView{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType, Protocol: g.Protocol,
		Coordinator: fmt.Sprintf("%s:%d (%d)", g.Coordinator.Host, g.Coordinator.Port, g.Coordinator.NodeID),
		Members:     []memberView{}, Partitions: []partitionLag{}}
	owner := map[tp]*memberView{}
	for _, m := range g.Members {
		mv := memberView{ConsumerID: m.MemberID, Host: m.ClientHost, ClientID: m.ClientID, Assignment: map[string][]int32{}}
		if m.InstanceID != nil {
			mv.InstanceID = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				mv.Assignment[t.Topic] = append(mv.Assignment[t.Topic], t.Partitions...)
			}
		}
		v.Members = append(v.Members, mv)
	}
	for i := range v.Members {
		for t, ps := range v.Members[i].Assignment {
			for _, p := range ps {
				owner[tp{t, p}] = &v.Members[i]
			}
		}
	}
	committed, err := r.adm.FetchOffsets(ctx, r.group)
	if err != nil {
		return nil, brokerErr("fetch the offsets of group "+r.group, err)
	}
	parts := map[tp]*partitionLag{}
	row := func(k tp) *partitionLag {
		if parts[k] == nil {
			parts[k] = &partitionLag{Topic: k.topic, Partition: k.part}
		}
		return parts[k]
	}
	committed.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			fmt.Fprintf(r.errw, "Warning: no committed offset of %s-%d: %v\n", o.Topic, o.Partition, o.Err)
			return
		}
		if o.At >= 0 {
			at := o.At
			row(tp{o.Topic, o.Partition}).CurrentOffset = &at
		}
	})
	for k, m := range owner {
		pl := row(k)
		pl.ConsumerID, pl.Host, pl.ClientID = m.ConsumerID, m.Host, m.ClientID
	}
	topics := map[string]bool{}
	for k := range parts {
		topics[k.topic] = true
	}
	if len(topics) > 0 {
		ends, err := r.adm.ListEndOffsets(ctx, sortedKeys(topics)...)
		if err != nil && !isShardErr(err) {
			return nil, brokerErr("list the log end offsets", err)
		}
		for k, pl := range parts {
			if lo, ok := ends.Lookup(k.topic, k.part); ok && lo.Err == nil {
				end := lo.Offset
				pl.LogEndOffset = &end
				if pl.CurrentOffset != nil {
					lag := end - *pl.CurrentOffset
					pl.Lag = &lag
				}
			}
		}
	}
	for _, pl := range parts {
		v.Partitions = append(v.Partitions, *pl)
	}
	sort.Slice(v.Partitions, func(i, j int) bool {
		a, b := v.Partitions[i], v.Partitions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return v, nil
}

// describe is --describe [--members [--verbose] | --state], of --group or
// of every listed group (--all-groups: one table each, a blank line
// between; with --json an array).
func (r *groupsRun) describe(ctx context.Context) error {
	if !r.c.Bool("all-groups") {
		v, err := r.groupView(ctx)
		if err != nil {
			return err
		}
		if r.json {
			return writeJSON(r.w, v)
		}
		return r.printGroup(v)
	}
	names, err := r.listNames(ctx)
	if err != nil {
		return err
	}
	views := []*groupView{}
	failed := 0
	for i, name := range names {
		r.group = name
		v, err := r.groupView(ctx)
		if err != nil {
			fmt.Fprintf(r.errw, "Error: %v\n", err)
			failed++
			continue
		}
		if r.json {
			views = append(views, v)
			continue
		}
		if i > 0 {
			fmt.Fprintln(r.w)
		}
		if err := r.printGroup(v); err != nil {
			return err
		}
	}
	if r.json {
		if err := writeJSON(r.w, views); err != nil {
			return failErr(err)
		}
	}
	if failed > 0 {
		return refused("%d of %d groups could not be described", failed, len(names))
	}
	return nil
}

// listNames lists every group's id, sorted.
func (r *groupsRun) listNames(ctx context.Context) ([]string, error) {
	listed, err := r.adm.ListGroups(ctx)
	if err != nil {
		return nil, brokerErr("list groups", err)
	}
	return listed.Groups(), nil
}

// printGroup prints one described group as the table the flags ask for.
func (r *groupsRun) printGroup(v *groupView) error {
	switch v.State {
	case "Empty":
		fmt.Fprintf(r.errw, "Consumer group '%s' has no active members.\n", v.Group)
	case "PreparingRebalance", "CompletingRebalance":
		fmt.Fprintf(r.errw, "Warning: Consumer group '%s' is rebalancing.\n", v.Group)
	}
	var t *table
	switch {
	case r.c.Bool("state"):
		t = newTable("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
		t.add(v.Group, v.Coordinator, dash(v.Protocol), v.State, strconv.Itoa(len(v.Members)))
	case r.c.Bool("members"):
		verbose := r.c.Bool("verbose")
		h := []string{"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"}
		if verbose {
			h = append(h, "ASSIGNMENT")
		}
		t = newTable(h...)
		for _, m := range v.Members {
			n, as := 0, make([]string, 0, len(m.Assignment))
			for _, topic := range sortedKeys(m.Assignment) {
				ps := append([]int32(nil), m.Assignment[topic]...)
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
				n += len(ps)
				strs := make([]string, len(ps))
				for i, p := range ps {
					strs[i] = strconv.Itoa(int(p))
				}
				as = append(as, topic+"("+strings.Join(strs, ",")+")")
			}
			cells := []string{v.Group, m.ConsumerID, dash(m.Host), dash(m.ClientID), strconv.Itoa(n)}
			if verbose {
				cells = append(cells, dash(strings.Join(as, ",")))
			}
			t.add(cells...)
		}
	default:
		t = newTable("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")
		for _, p := range v.Partitions {
			t.add(v.Group, p.Topic, strconv.Itoa(int(p.Partition)), optCell(p.CurrentOffset), optCell(p.LogEndOffset),
				optCell(p.Lag), dash(p.ConsumerID), dash(p.Host), dash(p.ClientID))
		}
	}
	if err := t.write(r.w); err != nil {
		return failErr(err)
	}
	return nil
}

// optCell is *n, or "-" for nil.
func optCell(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func isShardErr(err error) bool {
	var se *kadm.ShardErrors
	return errors.As(err, &se)
}
