package record

import (
	"errors"
	"fmt"
	"io"
)

// MaxDecompressedSize caps how many bytes one Decompress call may produce, to
// defeat decompression bombs. Larger output fails with ErrCompression. Set it
// at start-up, before decoding concurrently.
var MaxDecompressedSize = 256 << 20

// errTooLarge is wrapped (with ErrCompression) when output would exceed
// MaxDecompressedSize.
var errTooLarge = errors.New("decompressed size exceeds the limit")

// Compress appends src compressed with c, in the stream format Kafka stores
// for v1 and v2 (gzip, xerial-framed snappy, lz4 frame with 64 KiB independent
// blocks, zstd frame), at the codec's default level.
func Compress(c Codec, dst, src []byte) ([]byte, error) {
	return compressLevel(c, 0, dst, src)
}

// CompressLegacy is Compress for a legacy message of the given magic: for
// magic 0 and lz4 it writes the frame header checksum the way Kafka did for v0
// (over the magic number too, KAFKA-3160). zstd is refused below magic 2.
func CompressLegacy(magic int8, c Codec, dst, src []byte) ([]byte, error) {
	if c == CodecZstd && magic < 2 {
		return dst, fmt.Errorf("%w: zstd needs magic 2, have %d", ErrBadOptions, magic)
	}
	start := len(dst)
	dst, err := compressLevel(c, 0, dst, src)
	if err == nil && c == CodecLZ4 && magic == 0 {
		breakLZ4HeaderChecksum(dst[start:])
	}
	return dst, err
}

func compressLevel(c Codec, level int, dst, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		return compressGzip(dst, src, level)
	case CodecSnappy:
		return compressSnappy(dst, src), nil
	case CodecLZ4:
		return compressLZ4(dst, src, level)
	case CodecZstd:
		return compressZstd(dst, src, level)
	}
	return dst, fmt.Errorf("%w: %d", ErrUnknownCodec, c)
}

// Decompress appends the decompression of src, a stream written by codec c,
// to dst. At most MaxDecompressedSize bytes are produced. Bad input yields an
// error wrapping ErrCompression; it never panics.
func Decompress(c Codec, dst, src []byte) ([]byte, error) {
	return decompress(c, dst, src, false)
}

// DecompressLegacy is Decompress for the value of a legacy wrapper message of
// the given magic: zstd is refused, and for magic 0 an lz4 frame whose header
// checksum was computed Kafka's broken v0 way is accepted.
func DecompressLegacy(magic int8, c Codec, dst, src []byte) ([]byte, error) {
	if c == CodecZstd && magic < 2 {
		return dst, fmt.Errorf("%w: zstd is not allowed with magic %d", ErrCompression, magic)
	}
	return decompress(c, dst, src, magic == 0)
}

func decompress(c Codec, dst, src []byte, legacyLZ4 bool) ([]byte, error) {
	var err error
	start := len(dst)
	if len(src) == 0 && c != CodecNone {
		return dst, fmt.Errorf("%w: %s: empty stream", ErrCompression, c)
	}
	switch c {
	case CodecNone:
		if len(src) > MaxDecompressedSize {
			return dst, fmt.Errorf("%w: %w", ErrCompression, errTooLarge)
		}
		return append(dst, src...), nil
	case CodecGzip:
		dst, err = decompressGzip(dst, src)
	case CodecSnappy:
		dst, err = decompressSnappy(dst, src)
	case CodecLZ4:
		dst, err = decompressLZ4(dst, src, legacyLZ4)
	case CodecZstd:
		dst, err = decompressZstd(dst, src)
	default:
		return dst, fmt.Errorf("%w: %w: %d", ErrCompression, ErrUnknownCodec, c)
	}
	if err != nil {
		return dst[:start], fmt.Errorf("%w: %s: %w", ErrCompression, c, err)
	}
	return dst, nil
}

// readLimited appends everything r yields to dst, failing once more than
// MaxDecompressedSize bytes came out.
func readLimited(dst []byte, r io.Reader) ([]byte, error) {
	limit := MaxDecompressedSize
	start := len(dst)
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		room := dst[len(dst):cap(dst)]
		if over := len(dst) - start + len(room) - (limit + 1); over > 0 {
			room = room[:len(room)-over]
		}
		n, err := r.Read(room)
		dst = dst[:len(dst)+n]
		if len(dst)-start > limit {
			return dst, errTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
		if n == 0 && len(room) == 0 {
			return dst, errTooLarge
		}
	}
}
