package sim

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return " error: " + err.Error()
}

func fetchSummary(req *kmsg.FetchRequest) string {
	var b strings.Builder
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			fmt.Fprintf(&b, " %s-%d@%d(e%d,last %d)", t.Topic, p.Partition, p.FetchOffset, p.CurrentLeaderEpoch, p.LastFetchedEpoch)
		}
	}
	return b.String()
}

func fetchRespSummary(resp *kmsg.FetchResponse) string {
	if resp == nil {
		return ""
	}
	var b strings.Builder
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			fmt.Fprintf(&b, " %s-%d:err %d hw %d ls %d %dB", t.Topic, p.Partition, p.ErrorCode, p.HighWatermark, p.LogStartOffset, len(p.RecordBatches))
			if len(p.RecordBatches) >= 61 {
				bt := record.Batch(p.RecordBatches)
				fmt.Fprintf(&b, " from [%d,%d]e%d", bt.BaseOffset(), bt.LastOffset(), bt.PartitionLeaderEpoch())
			}
			if p.DivergingEpoch.EndOffset >= 0 {
				fmt.Fprintf(&b, " diverging(%d,%d)", p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset)
			}
		}
	}
	return b.String()
}

func alterSummary(req *kmsg.AlterPartitionRequest) string {
	var b strings.Builder
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			fmt.Fprintf(&b, " %s-%d isr %v (e%d v%d)", t.Topic, p.Partition, p.NewISR, p.LeaderEpoch, p.PartitionEpoch)
		}
	}
	return b.String()
}

func alterRespSummary(resp *kmsg.AlterPartitionResponse) string {
	if resp == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "err %d", resp.ErrorCode)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			fmt.Fprintf(&b, " %s-%d:err %d isr %v v%d", t.Topic, p.Partition, p.ErrorCode, p.ISR, p.PartitionEpoch)
		}
	}
	return b.String()
}

// summarizeControl describes a control request for the trace.
func summarizeControl(req kmsg.Request) string {
	var b strings.Builder
	switch r := req.(type) {
	case *kmsg.LeaderAndISRRequest:
		fmt.Fprintf(&b, "LeaderAndIsr (controller epoch %d)", r.ControllerEpoch)
		for _, t := range r.TopicStates {
			for _, p := range t.PartitionStates {
				fmt.Fprintf(&b, " %s-%d leader %d epoch %d isr %v v%d", t.Topic, p.Partition, p.Leader, p.LeaderEpoch, p.ISR, p.ZKVersion)
			}
		}
	case *kmsg.UpdateMetadataRequest:
		fmt.Fprintf(&b, "UpdateMetadata (controller epoch %d, %d brokers)", r.ControllerEpoch, len(r.LiveBrokers))
		for _, t := range r.TopicStates {
			for _, p := range t.PartitionStates {
				fmt.Fprintf(&b, " %s-%d leader %d epoch %d", t.Topic, p.Partition, p.Leader, p.LeaderEpoch)
			}
		}
	case *kmsg.StopReplicaRequest:
		fmt.Fprintf(&b, "StopReplica (controller epoch %d)", r.ControllerEpoch)
		for _, t := range r.Topics {
			for _, p := range t.PartitionStates {
				fmt.Fprintf(&b, " %s-%d epoch %d delete %v", t.Topic, p.Partition, p.LeaderEpoch, p.Delete)
			}
		}
	default:
		b.WriteString(kmsg.NameForKey(req.Key()))
	}
	return b.String()
}
