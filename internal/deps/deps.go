//go:build tools

// Package deps pins the project's dependencies in go.mod before every package that
// uses them exists. Build-tagged out of every build.
package deps

import (
	_ "github.com/cespare/xxhash/v2"
	_ "github.com/edsrzf/mmap-go"
	_ "github.com/go-zookeeper/zk"
	_ "github.com/golang/snappy"
	_ "github.com/klauspost/compress/snappy/xerial"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/pierrec/lz4/v4"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "github.com/twmb/franz-go/pkg/kmsg"
	_ "github.com/urfave/cli/v2"
	_ "golang.org/x/sys/unix"
)
