package server

import (
	"slices"
	"sort"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/recovery"
)

// handleDescribeLogDirs answers DescribeLogDirs (key 35, v0-4) as Kafka's
// ReplicaManager.describeLogDirs: per configured log dir, in log.dirs
// order, its replicas of the topics asked (every topic when topics is
// null) with their size (the segment files' bytes), offset lag
// (max(high watermark - log end offset, 0)) and is_future false, and the
// future replicas being copied into it (AlterReplicaLogDirs) with
// is_future true and their lag behind the current replica's log end
// offset (Kafka's future replicas' offset lag); an offline dir answers
// KAFKA_STORAGE_ERROR with no topics. v4 adds the volume's total and
// usable bytes (statfs; -1 when unknown).
func (s *Server) handleDescribeLogDirs(req *kmsg.DescribeLogDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	var want map[string][]int32
	if req.Topics != nil {
		want = map[string][]int32{}
		for _, t := range req.Topics {
			want[t.Topic] = append(want[t.Topic], t.Partitions...)
		}
	}
	failed := s.topics.dirs.snapshot()
	futures := s.topics.futureMoves()
	for _, dir := range s.cfg.LogDirs {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = dir
		if _, bad := failed[dir]; bad {
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err == nil {
			rd.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
			rd.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
		}
		var logs map[recovery.TopicPartition]logSizer
		for _, dd := range s.topics.dataDirs {
			if dd.Dir() == dir {
				logs = map[recovery.TopicPartition]logSizer{}
				for tp, l := range dd.Logs() {
					logs[tp] = l
				}
			}
		}
		var entries []kmsg.DescribeLogDirsResponseDirTopicPartition
		var topicOf []string
		for tp, l := range logs {
			if want != nil && !slices.Contains(want[tp.Topic], tp.Partition) {
				continue
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition = tp.Partition
			rp.Size = l.Size()
			rp.OffsetLag = max(l.HighWatermark()-l.LogEndOffset(), 0)
			entries, topicOf = append(entries, rp), append(topicOf, tp.Topic)
		}
		for _, mv := range futures { // replicas moving here (logdir_move.go)
			if mv.Dir != dir || (want != nil && !slices.Contains(want[mv.Topic], mv.Partition)) {
				continue
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition, rp.Size, rp.OffsetLag, rp.IsFuture = mv.Partition, mv.Size, mv.Lag, true
			entries, topicOf = append(entries, rp), append(topicOf, mv.Topic)
		}
		idx := make([]int, len(entries))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool {
			i, j := idx[a], idx[b]
			if topicOf[i] != topicOf[j] {
				return topicOf[i] < topicOf[j]
			}
			return entries[i].Partition < entries[j].Partition
		})
		for _, i := range idx {
			if n := len(rd.Topics); n == 0 || rd.Topics[n-1].Topic != topicOf[i] {
				rt := kmsg.NewDescribeLogDirsResponseDirTopic()
				rt.Topic = topicOf[i]
				rd.Topics = append(rd.Topics, rt)
			}
			rd.Topics[len(rd.Topics)-1].Partitions = append(rd.Topics[len(rd.Topics)-1].Partitions, entries[i])
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return resp
}

// logSizer is what DescribeLogDirs reads of a partition log.
type logSizer interface {
	Size() int64
	HighWatermark() int64
	LogEndOffset() int64
}
