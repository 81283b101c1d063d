package tools

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// reassignRun is one run of the reassign phase.
type reassignRun struct {
	bytes         int64         // moved without a throttle (the new replica's .log bytes)
	took          time.Duration // its first byte to the last
	limit         float64       // MB/s of the loopback limit over as many bytes, just before
	tBytes        int64         // moved under the throttle
	tTook         time.Duration // its first byte to the last
	tSteadyBytes  int64         // from the first 20% of tBytes to the end
	tSteady       time.Duration
	throttleBytes int64 // the throttle, bytes/s
}

// reassignPhase moves data as strata reassign does (AlterPartitionReassignments
// adding a replica) twice, on one-replica topics of broker A pre-filled with
// acks=1: first --reassign-mb MB to broker B without a throttle, timed from
// B's first byte to its .log files reaching A's size (polled every 2 ms)
// beside the loopback limit over as many bytes measured just before (B's
// page cache warmed first, as the catch-up phase does); then
// --reassign-throttle-mb-per-sec × --reassign-throttle-seconds MB to broker C
// with the throttle strata reassign --throttle sets (the rates on A and C,
// the topic's throttled-replica lists), timed the same way, overall and from
// the first 20% of the bytes on (past the burst a fresh quota allows, one
// window of replication.quota.window.num).
func (cfg *benchClusterConfig) reassignPhase(cl *benchCluster, prefix string, r *clusterFaultRun, bar *progress) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	md, err := cl.metadata(ctx, "")
	if err != nil {
		return err
	}
	var ids []int32
	for _, b := range cl.brokers {
		if b.id != md.ControllerID {
			ids = append(ids, b.id)
		}
	}
	ids = append(ids, md.ControllerID) // A and B are not the controller
	a, b, c := ids[0], ids[1], ids[2]
	kcl, err := kgo.NewClient(kgo.SeedBrokers(cl.addrs()...))
	if err != nil {
		return err
	}
	defer kcl.Close()
	adm := kadm.NewClient(kcl)
	rr := &reassignRun{throttleBytes: int64(cfg.reassignThrottleMBps * 1e6)}

	free := prefix + "-reassign"
	if err := cfg.fillOne(ctx, cl, free, a, cfg.reassignMB*1_000_000, bar); err != nil {
		return err
	}
	target := cl.broker(a).partitionBytes(free, 0)
	if rr.limit, err = loopbackLimit(target); err != nil {
		return fmt.Errorf("loopback limit: %w", err)
	}
	if err := warmPages(cl.broker(b).dataDir, target); err != nil {
		return err
	}
	if rr.took, _, _, err = moveAndTime(ctx, cl, adm, free, a, b, target); err != nil {
		return err
	}
	rr.bytes = target
	if err := deleteTopic(ctx, cl.addrs(), free); err != nil {
		return err
	}

	thr := prefix + "-reassign-throttled"
	if err := cfg.fillOne(ctx, cl, thr, a, int64(float64(rr.throttleBytes)*cfg.reassignThrottleSeconds), bar); err != nil {
		return err
	}
	target = cl.broker(a).partitionBytes(thr, 0)
	rate := strconv.FormatInt(rr.throttleBytes, 10)
	lists := throttleLists([]planPartition{{Topic: thr, Replicas: []int32{a}}}, []planPartition{{Topic: thr, Replicas: []int32{a, c}}})[thr]
	leader, follower := lists[0][0], lists[1][0]
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: cfgLeaderReplicas, Value: &leader},
		{Op: kadm.SetConfig, Name: cfgFollowReplicas, Value: &follower},
	}, thr); err != nil {
		return err
	}
	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: cfgLeaderRate, Value: &rate},
		{Op: kadm.SetConfig, Name: cfgFollowerRate, Value: &rate},
	}, a, c)
	if err = alterConfigsErr(resps, err); err != nil {
		return fmt.Errorf("setting the throttle: %w", err)
	}
	// The brokers read the throttle configs again on the LeaderAndIsr that
	// starts the move (refreshThrottles), so it starts throttled.
	var bytes20 int64
	rr.tTook, rr.tSteady, bytes20, err = moveAndTime(ctx, cl, adm, thr, a, c, target)
	if err != nil {
		return err
	}
	rr.tBytes, rr.tSteadyBytes = target, target-bytes20
	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: cfgLeaderRate},
		{Op: kadm.DeleteConfig, Name: cfgFollowerRate},
	}, a, c)
	if err = alterConfigsErr(resps, err); err != nil {
		return fmt.Errorf("removing the throttle: %w", err)
	}
	r.reassign = rr
	return deleteTopic(ctx, cl.addrs(), thr)
}

// fillOne creates topic with one replica on broker id and produces about
// n value bytes to it with acks=1.
func (cfg *benchClusterConfig) fillOne(ctx context.Context, cl *benchCluster, topic string, id int32, n int64, bar *progress) error {
	_, one := cfg.targets(cl.addrs(), 1)
	if err := createFaultTopic(ctx, one, topic, []int32{id}); err != nil {
		return err
	}
	d := cfg.drive
	d.records = max(n/int64(d.recordSize), 1)
	if _, err := benchProduce(d, one, topic, bar); err != nil {
		return fmt.Errorf("filling %s: %w", topic, err)
	}
	return nil
}

// moveAndTime adds a replica on broker to of topic's partition 0 (on
// from) and polls to's .log bytes every 2 ms until they reach target: the
// time from its first byte to the last, and from when it passed 20% of
// target (with its bytes then) to the last. It returns once to is in the ISR.
func moveAndTime(ctx context.Context, cl *benchCluster, adm *kadm.Client, topic string, from, to int32, target int64) (took, steady time.Duration, bytes20 int64, err error) {
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, []int32{from, to})
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return 0, 0, 0, err
	}
	if r, ok := resps[topic][0]; !ok || r.Err != nil {
		return 0, 0, 0, fmt.Errorf("AlterPartitionReassignments %s: %v", topic, r.Err)
	}
	dst := cl.broker(to)
	var first, at20 time.Time
	for {
		n := dst.partitionBytes(topic, 0)
		if first.IsZero() && n > 0 {
			first = time.Now()
		}
		if at20.IsZero() && n >= target/5 {
			at20, bytes20 = time.Now(), n
		}
		if n >= target {
			break
		}
		if ctx.Err() != nil {
			return 0, 0, 0, fmt.Errorf("broker %d at %d of %d bytes: %w", to, n, target, ctx.Err())
		}
		time.Sleep(2 * time.Millisecond)
	}
	took, steady = time.Since(first), time.Since(at20)
	if err := cl.waitInSync(ctx, topic, from, to); err != nil {
		return 0, 0, 0, err
	}
	return took, steady, bytes20, nil
}
