package record

import "fmt"

// Codec is a compression codec id, as stored in attribute bits 0-2.
type Codec int8

const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

var codecNames = [...]string{"none", "gzip", "snappy", "lz4", "zstd"}

// String returns the lower-case name Kafka's tools print.
func (c Codec) String() string {
	if c >= 0 && int(c) < len(codecNames) {
		return codecNames[c]
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// ParseCodec maps a name ("none", "gzip", "snappy", "lz4", "zstd") to a Codec.
func ParseCodec(s string) (Codec, error) {
	for i, n := range codecNames {
		if n == s {
			return Codec(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownCodec, s)
}
