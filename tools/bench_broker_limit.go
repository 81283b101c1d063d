package tools

import (
	"errors"
	"io"
	"net"
	"time"
)

// loopbackLimit streams total bytes over one TCP connection on 127.0.0.1
// in 1 MiB writes and reads, and returns MB/s: the most any broker could move
// through one client connection on this machine.
func loopbackLimit(total int64) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	read := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			read <- err
			return
		}
		defer c.Close()
		n, err := io.CopyBuffer(io.Discard, io.LimitReader(c, total), make([]byte, 1<<20))
		if err == nil && n < total {
			err = io.ErrUnexpectedEOF
		}
		read <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	t0 := time.Now()
	for sent := int64(0); sent < total; {
		n, err := c.Write(buf[:min(int64(len(buf)), total-sent)])
		sent += int64(n)
		if err != nil {
			return 0, err
		}
	}
	if err := <-read; err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	return mbps(total, time.Since(t0).Seconds()), nil
}
