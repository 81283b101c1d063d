package sim

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
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
			fmt.Fprintf(&b, " %s-%d:err %d hw %d %dB", t.Topic, p.Partition, p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
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
