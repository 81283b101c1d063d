package recovery

import (
	"strconv"
	"strings"

	"github.com/stratalog/strata/internal/checkpoint"
)

// CleanShutdownFile is the clean-shutdown marker Kafka writes in each data
// directory whose logs all closed cleanly.
const CleanShutdownFile = ".kafka_cleanshutdown"

// Suffixes of partition directories that are not live partitions.
var skippedDirSuffixes = []string{"-delete", "-future", "-stray"}

// ParsePartitionDir splits a partition directory name "<topic>-<partition>" at
// its last '-'. ok is false for names that are not live partition directories
// (deletion, future and stray directories, invalid topics, bad numbers).
func ParsePartitionDir(name string) (tp checkpoint.TopicPartition, ok bool) {
	for _, s := range skippedDirSuffixes {
		if strings.HasSuffix(name, s) {
			return tp, false
		}
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return tp, false
	}
	num := name[i+1:]
	for j := 0; j < len(num); j++ {
		if num[j] < '0' || num[j] > '9' {
			return tp, false
		}
	}
	p, err := strconv.ParseInt(num, 10, 32)
	if err != nil {
		return tp, false
	}
	topic := name[:i]
	if !checkpoint.ValidTopic(topic) {
		return tp, false
	}
	return checkpoint.TopicPartition{Topic: topic, Partition: int32(p)}, true
}
