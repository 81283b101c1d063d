package record

import (
	"sync"

	"github.com/klauspost/compress/zstd"
)

var (
	zstdMu sync.Mutex
	// zstdEncoders holds one encoder per encoder level (EncodeAll is
	// concurrency safe). Keyed by the klauspost level that zstd's levels
	// map to, so the map has at most four entries whatever levels a
	// topic config asks for.
	zstdEncoders = map[zstd.EncoderLevel]*zstd.Encoder{}
)

func zstdEncoder(level int) (*zstd.Encoder, error) {
	l := zstd.SpeedDefault // zstd level 3, Kafka's default
	if level != 0 {
		l = zstd.EncoderLevelFromZstd(level)
	}
	zstdMu.Lock()
	defer zstdMu.Unlock()
	if e := zstdEncoders[l]; e != nil {
		return e, nil
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(l), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
	if err != nil {
		return nil, err
	}
	zstdEncoders[l] = e
	return e, nil
}

func compressZstd(dst, src []byte, level int) ([]byte, error) {
	e, err := zstdEncoder(level)
	if err != nil {
		return dst, err
	}
	return e.EncodeAll(src, dst), nil
}

// pooledZstdDecoder remembers the limit its decoder was built with.
type pooledZstdDecoder struct {
	d     *zstd.Decoder
	limit int
}

var zstdDecoders sync.Pool

func decompressZstd(dst, src []byte) ([]byte, error) {
	limit := MaxDecompressedSize
	pd, _ := zstdDecoders.Get().(*pooledZstdDecoder)
	if pd == nil || pd.limit != limit {
		if pd != nil {
			pd.d.Close()
		}
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(max(limit, 1))),
			zstd.WithDecoderMaxWindow(uint64(max(limit, zstd.MinWindowSize))))
		if err != nil {
			return dst, err
		}
		pd = &pooledZstdDecoder{d: d, limit: limit}
	}
	defer zstdDecoders.Put(pd)
	start := len(dst)
	out, err := pd.d.DecodeAll(src, dst)
	if err != nil {
		return dst[:start], err
	}
	if len(out)-start > limit {
		return dst[:start], errTooLarge
	}
	return out, nil
}
