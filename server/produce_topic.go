package server

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stratalog/strata/record"
)

// produceSettings are a topic's produce-time limits, resolved from its
// overrides and the broker defaults whenever its configs change.
type produceSettings struct {
	maxBytes int32 // max.message.bytes, else message.max.bytes
	// recompress is set when compression.type is not "producer": batches
	// in another codec are recompressed to codec before the append.
	recompress bool
	codec      record.Codec
	level      int // record's level for codec (record.BatchOptions.Level)
}

// compressionCodecs maps compression.type values to codecs ("producer"
// keeps the batch's own).
var compressionCodecs = map[string]record.Codec{
	"uncompressed": record.CodecNone, "gzip": record.CodecGzip, "snappy": record.CodecSnappy,
	"lz4": record.CodecLZ4, "zstd": record.CodecZstd,
}

// lz4DefaultLevel is compression.lz4.level's default. As in Kafka, it
// means lz4's fast compressor; every other level is an lz4-HC level.
const lz4DefaultLevel = 9

// recordLevel maps a Kafka level of codec c to record's: gzip -1 is the
// codec's default (record's 0); lz4 9 is the fast compressor (record's 0)
// and other levels are lz4-HC levels, of which pierrec/lz4 has 1-9, so
// 10-17 compress as 9; zstd levels are zstd's (record maps them to
// klauspost/compress's encoder levels).
func recordLevel(c record.Codec, level int) int {
	switch {
	case c == record.CodecGzip && level < 0:
		return 0
	case c == record.CodecLZ4 && level == lz4DefaultLevel:
		return 0
	case c == record.CodecLZ4:
		return min(level, 9)
	}
	return level
}

// produceSettingsOf are the produce settings of a topic's effective config
// c: its max.message.bytes, and with compression.type (KIP-390) a codec
// other than producer, that codec at its compression.<codec>.level.
func produceSettingsOf(c *Config) *produceSettings {
	ps := &produceSettings{maxBytes: c.MessageMaxBytes}
	ps.codec, ps.recompress = compressionCodecs[c.CompressionType]
	switch ps.codec {
	case record.CodecGzip:
		ps.level = recordLevel(ps.codec, c.GzipLevel)
	case record.CodecLZ4:
		ps.level = recordLevel(ps.codec, c.LZ4Level)
	case record.CodecZstd:
		ps.level = recordLevel(ps.codec, c.ZstdLevel)
	}
	return ps
}

// produceSettings returns t's resolved settings (the broker defaults for a
// topic built without applyTopicConfigs).
func (t *topic) produceSettings(cfg *Config) *produceSettings {
	if ps := t.produce.Load(); ps != nil {
		return ps
	}
	return &produceSettings{maxBytes: cfg.MessageMaxBytes}
}

// checkBatchSize is Kafka's RecordTooLargeException check: a batch larger
// than the topic's max.message.bytes (else the broker's message.max.bytes)
// is MESSAGE_TOO_LARGE.
func (s *Server) checkBatchSize(t *topic, n int) (int16, string) {
	if limit := t.produceSettings(s.cfg).maxBytes; n > int(limit) {
		return kerr.MessageTooLarge.Code, fmt.Sprintf("batch of %d bytes exceeds max.message.bytes %d of topic %s", n, limit, t.name)
	}
	return 0, ""
}

// applyTopicCodec recompresses recs, a batch already validated by
// validateProduceBatch, to the topic's compression.type when that is not
// "producer" and differs from the batch's codec, at the topic's
// compression.<codec>.level, as Kafka's LogValidator does: offsets deltas, timestamps, keys, values and headers are kept, the
// CRC is recomputed, and the result must still fit max.message.bytes. With
// strata.produce.validation=header a compressed batch's records are checked
// here first, since recompression reads them all anyway.
func (s *Server) applyTopicCodec(c *conn, t *topic, recs []byte) ([]byte, int16, string) {
	ps := t.produceSettings(s.cfg)
	b := record.Batch(recs)
	if !ps.recompress || b.Codec() == ps.codec {
		return recs, 0, ""
	}
	if s.cfg.ProduceValidation != "full" && b.Codec() != record.CodecNone {
		if code, msg := c.validateStream(b, false); code != 0 {
			return nil, code, msg
		}
	}
	// Streamed from the old codec to the new one, within the decompression
	// budget, and given up as soon as the result passes max.message.bytes.
	release := s.decompression.acquire(record.RecompressMemory(b.Codec(), b.RecordsBytes(), ps.codec, ps.level))
	out, err := b.AppendRecompressedLimit(make([]byte, 0, len(recs)+64), ps.codec, ps.level, int(ps.maxBytes))
	release()
	if errors.Is(err, record.ErrRecompressedTooLarge) {
		return nil, kerr.MessageTooLarge.Code, fmt.Sprintf("batch exceeds max.message.bytes %d of topic %s after recompression to %s", ps.maxBytes, t.name, ps.codec)
	}
	if err != nil {
		return nil, kerr.CorruptMessage.Code, "recompressing to compression.type " + ps.codec.String() + ": " + err.Error()
	}
	if code, msg := s.checkBatchSize(t, len(out)); code != 0 {
		return nil, code, msg + " after recompression to " + ps.codec.String()
	}
	return out, 0, ""
}

// fetchCodecCheck is Kafka's KIP-110 rule for old consumers: a Fetch below
// v10 cannot carry zstd, so on a topic whose compression.type is zstd (every
// batch appended is zstd) it gets UNSUPPORTED_COMPRESSION_TYPE.
func (s *Server) fetchCodecCheck(topic string, version int16) int16 {
	if version >= 10 {
		return 0
	}
	if t := s.topics.get(topic); t != nil {
		if ps := t.produceSettings(s.cfg); ps.recompress && ps.codec == record.CodecZstd {
			return kerr.UnsupportedCompressionType.Code
		}
	}
	return 0
}
