package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
)

// xerial snappy-java framing: an 8-byte magic, version 1 and minimum
// compatible version 1 (int32 BE each), then [int32 BE length][snappy block]
// chunks of up to 32 KiB of input each.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderLen = 16
	xerialBlockSize = 32 << 10
)

var errSnappyFraming = errors.New("malformed xerial framing")

func compressSnappy(dst, src []byte) []byte {
	// Reserve the worst case so xerial.Encode writes in place after dst.
	need := xerialHeaderLen
	for n := len(src); n > 0; n -= xerialBlockSize {
		need += 4 + s2.MaxEncodedLen(min(n, xerialBlockSize))
	}
	if cap(dst)-len(dst) < need {
		nd := make([]byte, len(dst), len(dst)+need)
		copy(nd, dst)
		dst = nd
	}
	out := xerial.Encode(dst[len(dst):], src)
	return dst[:len(dst)+len(out)]
}

// decompressSnappy accepts xerial-framed data and a raw snappy block.
func decompressSnappy(dst, src []byte) ([]byte, error) {
	limit := MaxDecompressedSize
	start := len(dst)
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(dst, src, limit)
	}
	if len(src) < xerialHeaderLen {
		return dst, fmt.Errorf("%w: %d-byte header", errSnappyFraming, len(src))
	}
	for p := xerialHeaderLen; p < len(src); {
		if len(src)-p < 4 {
			return dst[:start], fmt.Errorf("%w: %d trailing bytes", errSnappyFraming, len(src)-p)
		}
		n := int64(binary.BigEndian.Uint32(src[p:]))
		p += 4
		if n > int64(len(src)-p) {
			return dst[:start], fmt.Errorf("%w: chunk of %d bytes with %d left", errSnappyFraming, n, len(src)-p)
		}
		var err error
		if dst, err = snappyBlock(dst, src[p:p+int(n)], limit-(len(dst)-start)); err != nil {
			return dst[:start], err
		}
		p += int(n)
	}
	return dst, nil
}

// snappyBlock appends the decoding of one raw snappy block, at most limit bytes.
func snappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return dst, err
	}
	if n > limit {
		return dst, errTooLarge
	}
	l := len(dst)
	dst = grow(dst, n)
	if _, err := snappy.Decode(dst[l:l+n], src); err != nil {
		return dst[:l], err
	}
	return dst[:l+n], nil
}

// grow makes room for n more bytes after len(dst).
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	nd := make([]byte, len(dst), len(dst)+n+len(dst)/4)
	copy(nd, dst)
	return nd
}
