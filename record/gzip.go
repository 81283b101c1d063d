package record

import (
	"bytes"
	"compress/flate"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// appendWriter is an io.Writer appending to a slice.
type appendWriter struct{ b []byte }

// compress streams src through zw, whose sink is w, appending the compressed
// bytes to dst; on error dst is returned unchanged.
func (w *appendWriter) compress(zw io.WriteCloser, dst, src []byte) ([]byte, error) {
	w.b = dst
	_, err := zw.Write(src)
	if err == nil {
		err = zw.Close()
	}
	out := w.b
	w.b = nil
	if err != nil {
		return dst, err
	}
	return out, nil
}

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// gzipWriters pools writers per level 1..9 (index 0 is the default level).
var gzipWriters [10]sync.Pool

type gzipWriter struct {
	zw *gzip.Writer
	aw appendWriter
}

// getGzipWriter takes a pooled writer of level (0..9, 0 the default) whose
// sink is its appendWriter; put it back with gzipWriters[level].Put.
func getGzipWriter(level int) (*gzipWriter, error) {
	w, _ := gzipWriters[level].Get().(*gzipWriter)
	if w != nil {
		w.zw.Reset(&w.aw)
		return w, nil
	}
	l := level
	if l == 0 {
		l = flate.DefaultCompression
	}
	w = new(gzipWriter)
	var err error
	if w.zw, err = gzip.NewWriterLevel(&w.aw, l); err != nil {
		return nil, err
	}
	return w, nil
}

func compressGzip(dst, src []byte, level int) ([]byte, error) {
	if level < 0 || level > 9 {
		level = 0
	}
	w, err := getGzipWriter(level)
	if err != nil {
		return dst, err
	}
	out, err := w.aw.compress(w.zw, dst, src)
	gzipWriters[level].Put(w)
	return out, err
}

type gzipReader struct {
	zr gzip.Reader
	br bytes.Reader
}

var gzipReaders sync.Pool

func decompressGzip(dst, src []byte) ([]byte, error) {
	gr, _ := gzipReaders.Get().(*gzipReader)
	if gr == nil {
		gr = new(gzipReader)
	}
	defer func() {
		gr.br.Reset(nil)
		gzipReaders.Put(gr)
	}()
	gr.br.Reset(src)
	if err := gr.zr.Reset(&gr.br); err != nil {
		return dst, err
	}
	return readLimited(dst, &gr.zr)
}
