package main

import (
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// machineLimits are the machine's own limits, measured in the same run and on
// the same filesystem as the engines. MB = 10^6 bytes.
type machineLimits struct {
	writeMBps     float64 // sequential 1 MiB writes of 256 MiB + one fdatasync
	fdatasyncsSec float64 // 4 KiB append + fdatasync, per second
	readCRCMBps   float64 // read of that file from the page cache + CRC-32C
	loopbackMBps  float64 // one TCP stream over 127.0.0.1, 1 MiB writes
}

const limitFileBytes = 256 << 20

func measureLimits(base string) (machineLimits, error) {
	var m machineLimits
	dir, err := os.MkdirTemp(base, "peers-limit-*")
	if err != nil {
		return m, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "seq")
	if m.writeMBps, err = limitWrite(path); err != nil {
		return m, err
	}
	if m.readCRCMBps, err = limitReadCRC(path); err != nil {
		return m, err
	}
	if m.fdatasyncsSec, err = limitFdatasync(filepath.Join(dir, "sync"), time.Second); err != nil {
		return m, err
	}
	if m.loopbackMBps, err = limitLoopback(1 << 30); err != nil {
		return m, err
	}
	return m, nil
}

func limitWrite(path string) (float64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	t0 := time.Now()
	for n := 0; n < limitFileBytes; n += len(buf) {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return 0, err
	}
	return float64(limitFileBytes) / 1e6 / time.Since(t0).Seconds(), nil
}

func limitReadCRC(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	tab := crc32.MakeTable(crc32.Castagnoli)
	buf := make([]byte, 1<<20)
	var crc uint32
	var total int64
	t0 := time.Now()
	for {
		n, err := f.Read(buf)
		crc = crc32.Update(crc, tab, buf[:n])
		total += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	_ = crc
	return float64(total) / 1e6 / time.Since(t0).Seconds(), nil
}

// limitFdatasync appends 4 KiB and fdatasyncs, for about d.
func limitFdatasync(path string, d time.Duration) (float64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n := 0
	t0 := time.Now()
	for time.Since(t0) < d {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

// limitLoopback sends total bytes over one loopback TCP connection.
func limitLoopback(total int64) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = io.Copy(io.Discard, c)
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 1<<20)
	t0 := time.Now()
	for n := int64(0); n < total; n += int64(len(buf)) {
		if _, err := c.Write(buf); err != nil {
			c.Close()
			return 0, err
		}
	}
	c.Close()
	if err := <-done; err != nil {
		return 0, err
	}
	return float64(total) / 1e6 / time.Since(t0).Seconds(), nil
}
