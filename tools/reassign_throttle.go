package tools

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Replication throttles of a reassignment, as kafka-reassign-partitions.sh
// sets and clears them: --execute --throttle R sets, on every broker
// holding or receiving a moving replica, leader.replication.throttled.rate
// and follower.replication.throttled.rate to R (IncrementalAlterConfigs on
// the broker resource), and per topic leader.replication.throttled.replicas
// to the partition:broker pairs of the current replicas of its moving
// partitions and follower.replication.throttled.replicas to those of the
// replicas being added; --verify, once every partition of the plan is
// complete, deletes the rates on every broker (the log dir copy rate of
// --replica-alter-log-dirs-throttle too) and both lists on the plan's
// topics.
const (
	cfgLeaderRate       = "leader.replication.throttled.rate"
	cfgFollowerRate     = "follower.replication.throttled.rate"
	cfgAlterLogDirsRate = "replica.alter.log.dirs.io.max.bytes.per.second"
	cfgLeaderReplicas   = "leader.replication.throttled.replicas"
	cfgFollowReplicas   = "follower.replication.throttled.replicas"
	throttleVerifyNote  = "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed."
)

// throttleLists are a topic's throttled-replica lists for moving from cur
// to plan (the partitions whose replicas change).
func throttleLists(cur, plan []planPartition) map[string][2][]string {
	out := map[string][2][]string{}
	for i, p := range plan {
		old := cur[i].Replicas
		if slices.Equal(old, p.Replicas) {
			continue
		}
		l := out[p.Topic]
		for _, b := range old {
			l[0] = append(l[0], fmt.Sprintf("%d:%d", p.Partition, b))
		}
		for _, b := range p.Replicas {
			if !slices.Contains(old, b) {
				l[1] = append(l[1], fmt.Sprintf("%d:%d", p.Partition, b))
			}
		}
		out[p.Topic] = l
	}
	return out
}

// setThrottles applies --throttle rate for moving from cur to plan.
func (r *reassigner) setThrottles(ctx context.Context, cur, plan []planPartition, rate int64) error {
	lists := throttleLists(cur, plan)
	var brokers []int32
	for i, p := range plan {
		if slices.Equal(cur[i].Replicas, p.Replicas) {
			continue
		}
		for _, b := range slices.Concat(cur[i].Replicas, p.Replicas) {
			if !slices.Contains(brokers, b) {
				brokers = append(brokers, b)
			}
		}
	}
	if len(brokers) == 0 {
		return nil
	}
	slices.Sort(brokers)
	for _, t := range slices.Sorted(maps.Keys(lists)) {
		l := lists[t]
		leader, follower := strings.Join(l[0], ","), strings.Join(l[1], ",")
		resps, err := r.b.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: cfgLeaderReplicas, Value: &leader},
			{Op: kadm.SetConfig, Name: cfgFollowReplicas, Value: &follower},
		}, t)
		if err = alterConfigsErr(resps, err); err != nil {
			return &exitError{code: ExitProblems, err: fmt.Errorf("setting the throttled replicas of topic %s: %w; nothing was started", t, err)}
		}
	}
	v := strconv.FormatInt(rate, 10)
	resps, err := r.b.adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: cfgLeaderRate, Value: &v},
		{Op: kadm.SetConfig, Name: cfgFollowerRate, Value: &v},
	}, brokers...)
	if err = alterConfigsErr(resps, err); err != nil {
		return &exitError{code: ExitProblems, err: fmt.Errorf("setting the throttle rate on brokers %s: %w; nothing was started", fmtReplicas(brokers), err)}
	}
	fmt.Fprintln(r.out, throttleVerifyNote)
	fmt.Fprintf(r.out, "The inter-broker throttle limit was set to %d B/s\n", rate)
	return nil
}

// clearThrottles removes the rates from every broker and the lists from
// the plan's topics.
func (r *reassigner) clearThrottles(ctx context.Context, plan []planPartition) error {
	var topics []string
	for _, p := range plan {
		if !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
	}
	resps, err := r.b.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: cfgLeaderReplicas},
		{Op: kadm.DeleteConfig, Name: cfgFollowReplicas},
	}, topics...)
	if err = alterConfigsErr(resps, err); err != nil {
		return &exitError{code: ExitProblems, err: fmt.Errorf("removing the throttled replicas: %w", err)}
	}
	if len(r.brokers) > 0 {
		resps, err = r.b.adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: cfgLeaderRate},
			{Op: kadm.DeleteConfig, Name: cfgFollowerRate},
			{Op: kadm.DeleteConfig, Name: cfgAlterLogDirsRate},
		}, r.brokers...)
		if err = alterConfigsErr(resps, err); err != nil {
			return &exitError{code: ExitProblems, err: fmt.Errorf("removing the throttle rates: %w", err)}
		}
	}
	fmt.Fprintln(r.out, "Throttle was removed.")
	return nil
}

func alterConfigsErr(resps kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	var bad []string
	for _, r := range resps {
		if r.Err != nil {
			msg := r.Name + ": " + r.Err.Error()
			if r.ErrMessage != "" {
				msg += " (" + r.ErrMessage + ")"
			}
			bad = append(bad, msg)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}
