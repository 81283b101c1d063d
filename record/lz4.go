package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// Kafka's lz4 frames: version 1, independent blocks, no block or content
// checksum, no content size, 64 KiB maximum block size.

const lz4FrameMagic = 0x184D2204

var lz4Levels = [...]lz4.CompressionLevel{lz4.Fast, lz4.Level1, lz4.Level2, lz4.Level3, lz4.Level4,
	lz4.Level5, lz4.Level6, lz4.Level7, lz4.Level8, lz4.Level9}

var lz4Writers [len(lz4Levels)]sync.Pool

type lz4Writer struct {
	zw *lz4.Writer
	aw appendWriter
}

// getLZ4Writer takes a pooled writer of level whose sink is its
// appendWriter; put it back with lz4Writers[level].Put.
func getLZ4Writer(level int) (*lz4Writer, error) {
	w, _ := lz4Writers[level].Get().(*lz4Writer)
	if w != nil {
		w.zw.Reset(&w.aw)
		return w, nil
	}
	w = new(lz4Writer)
	w.zw = lz4.NewWriter(&w.aw)
	if err := w.zw.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false),
		lz4.BlockChecksumOption(false), lz4.ConcurrencyOption(1),
		lz4.CompressionLevelOption(lz4Levels[level])); err != nil {
		return nil, err
	}
	return w, nil
}

func compressLZ4(dst, src []byte, level int) ([]byte, error) {
	if level < 0 || level >= len(lz4Levels) {
		level = 0
	}
	w, err := getLZ4Writer(level)
	if err != nil {
		return dst, err
	}
	out, err := w.aw.compress(w.zw, dst, src)
	lz4Writers[level].Put(w)
	return out, err
}

type lz4Reader struct {
	zr  *lz4.Reader
	br  bytes.Reader
	hdr bytes.Reader
	mr  multiReader
	fix [19]byte // magic, FLG, BD, content size, dictionary id, checksum
}

// multiReader reads a fixed header then the rest, without allocating.
type multiReader struct{ a, b io.Reader }

func (m *multiReader) Read(p []byte) (int, error) {
	if m.a != nil {
		n, err := m.a.Read(p)
		if err == io.EOF {
			m.a = nil
			err = nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
	return m.b.Read(p)
}

var lz4Readers sync.Pool

var errLZ4Header = errors.New("bad lz4 frame header")

func decompressLZ4(dst, src []byte, legacy bool) ([]byte, error) {
	r, _ := lz4Readers.Get().(*lz4Reader)
	if r == nil {
		r = new(lz4Reader)
	}
	// A fresh lz4.Reader for every frame: Reset keeps the dictionary a
	// frame with dependent blocks left behind, and the reader decodes the
	// next frame's matches against it even when that frame's blocks are
	// independent, so a reused reader could complete one batch with another
	// batch's bytes (found by FuzzDecompressLZ4).
	r.zr = lz4.NewReader(nil)
	if err := r.zr.Apply(lz4.ConcurrencyOption(1)); err != nil {
		return dst, err
	}
	defer func() {
		r.br.Reset(nil)
		r.hdr.Reset(nil)
		r.zr.Reset(nil)
		r.zr = nil
		lz4Readers.Put(r)
	}()
	// One frame with the lz4 frame magic, as Kafka reads it: the lz4 reader
	// would otherwise take a skippable frame (magic 0x184D2A5x, matched on
	// its top 24 bits only) as a valid empty stream.
	if _, err := lz4HeaderLen(src); err != nil {
		return dst, err
	}
	var in io.Reader = &r.br
	r.br.Reset(src)
	if legacy {
		n, err := fixLegacyLZ4Header(r.fix[:], src)
		if err != nil {
			return dst, err
		}
		r.hdr.Reset(r.fix[:n])
		r.br.Reset(src[n:])
		r.mr = multiReader{a: &r.hdr, b: &r.br}
		in = &r.mr
	}
	r.zr.Reset(in)
	return readLimited(dst, r.zr)
}

// lz4HeaderLen returns the frame header length (magic through header
// checksum) of src.
func lz4HeaderLen(src []byte) (int, error) {
	if len(src) < 7 || binary.LittleEndian.Uint32(src) != lz4FrameMagic {
		return 0, errLZ4Header
	}
	n := 7
	if src[4]&0x08 != 0 { // content size
		n += 8
	}
	if src[4]&0x01 != 0 { // dictionary id
		n += 4
	}
	if len(src) < n {
		return 0, errLZ4Header
	}
	return n, nil
}

// fixLegacyLZ4Header copies the header of src into fix with a spec-correct
// checksum, provided the stored one is either the correct or Kafka's broken
// v0 variant (computed over the magic number too). It returns the header
// length.
func fixLegacyLZ4Header(fix, src []byte) (int, error) {
	n, err := lz4HeaderLen(src)
	if err != nil {
		return 0, err
	}
	copy(fix, src[:n])
	good := byte(xxh32(src[4:n-1]) >> 8)
	broken := byte(xxh32(src[:n-1]) >> 8)
	if hc := src[n-1]; hc != good && hc != broken {
		return 0, fmt.Errorf("%w: checksum %#x, want %#x (or Kafka v0's %#x)", errLZ4Header, hc, good, broken)
	}
	fix[n-1] = good
	return n, nil
}

// breakLZ4HeaderChecksum rewrites a frame's header checksum the way Kafka
// wrote it for magic 0.
func breakLZ4HeaderChecksum(frame []byte) {
	if n, err := lz4HeaderLen(frame); err == nil {
		frame[n-1] = byte(xxh32(frame[:n-1]) >> 8)
	}
}

// xxh32 is XXH32 with seed 0, used for the lz4 frame header checksum.
func xxh32(b []byte) uint32 {
	const (
		p1 uint32 = 2654435761
		p2 uint32 = 2246822519
		p3 uint32 = 3266489917
		p4 uint32 = 668265263
		p5 uint32 = 374761393
	)
	n := uint32(len(b))
	var h uint32
	if len(b) >= 16 {
		var v1, v2, v3, v4 uint32 = p1, p2, 0, 0
		v1 += p2
		v4 -= p1
		round := func(v, in uint32) uint32 { return bits.RotateLeft32(v+in*p2, 13) * p1 }
		for len(b) >= 16 {
			v1 = round(v1, binary.LittleEndian.Uint32(b))
			v2 = round(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = round(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = round(v4, binary.LittleEndian.Uint32(b[12:]))
			b = b[16:]
		}
		h = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		h = p5
	}
	h += n
	for len(b) >= 4 {
		h = bits.RotateLeft32(h+binary.LittleEndian.Uint32(b)*p3, 17) * p4
		b = b[4:]
	}
	for _, c := range b {
		h = bits.RotateLeft32(h+uint32(c)*p5, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}
