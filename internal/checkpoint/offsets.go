package checkpoint

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/stratalog/strata/internal/vfs"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// ParseOffsets parses an offset checkpoint (see the package doc).
func ParseOffsets(data []byte) (map[TopicPartition]int64, error) {
	m := map[TopicPartition]int64{}
	err := parse(data, OffsetsVersion, 3, "topic partition offset", func(line int, f []string) error {
		p, err := parseInt(line, "partition", f[1], 32)
		if err != nil {
			return err
		}
		if p < 0 {
			return malformed(line, "negative partition %d", p)
		}
		o, err := parseInt(line, "offset", f[2], 64)
		if err != nil {
			return err
		}
		m[TopicPartition{f[0], int32(p)}] = o
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// ValidTopic reports whether name is a legal Kafka topic name.
func ValidTopic(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > 249 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// AppendOffsets appends m in checkpoint format to dst, sorted by topic then
// partition.
func AppendOffsets(dst []byte, m map[TopicPartition]int64) ([]byte, error) {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	dst = strconv.AppendInt(dst, OffsetsVersion, 10)
	dst = append(dst, '\n')
	dst = strconv.AppendInt(dst, int64(len(keys)), 10)
	dst = append(dst, '\n')
	for _, tp := range keys {
		if !ValidTopic(tp.Topic) {
			return dst, fmt.Errorf("%w: %s", ErrInvalidTopic, excerpt(tp.Topic))
		}
		if tp.Partition < 0 {
			return dst, fmt.Errorf("%w: %s", ErrInvalidPartition, tp)
		}
		dst = append(dst, tp.Topic...)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(tp.Partition), 10)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, m[tp], 10)
		dst = append(dst, '\n')
	}
	return dst, nil
}

// FormatOffsets returns m in checkpoint format (see AppendOffsets).
func FormatOffsets(m map[TopicPartition]int64) ([]byte, error) {
	return AppendOffsets(make([]byte, 0, 4+len(m)*32), m)
}

// ReadOffsets reads an offset checkpoint file. A missing file is an error
// matching fs.ErrNotExist.
func ReadOffsets(fsys vfs.FS, path string) (map[TopicPartition]int64, error) {
	return read(fsys, path, ParseOffsets)
}

// WriteOffsets durably replaces an offset checkpoint file with m.
func WriteOffsets(fsys vfs.FS, path string, m map[TopicPartition]int64) error {
	data, err := FormatOffsets(m)
	return write(fsys, path, data, err)
}
