package server

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	text := "# comment\n! also\n  a=1\nb : two words \nc three\nlong=x\\\n   y\\\\\nesc=t\\=a\\u0041\n\nempty=\nnovalue\n"
	kv, keys, err := ParseProperties(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "1", "b": "two words ", "c": "three", "long": "xy\\", "esc": "t=aA", "empty": "", "novalue": ""}
	if !reflect.DeepEqual(kv, want) {
		t.Fatalf("got %q\nwant %q", kv, want)
	}
	if !reflect.DeepEqual(keys, []string{"a", "b", "c", "long", "esc", "empty", "novalue"}) {
		t.Fatalf("order %q", keys)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "server.properties")
	text := "broker.id=3\nlisteners=PLAINTEXT://0.0.0.0:9093\nadvertised.listeners=PLAINTEXT://kafka.example:19093\n" +
		"log.dirs=/a, /b\nnum.partitions=4\nlog.retention.ms=1000\nlog.retention.hours=1\nmessage.max.bytes=2000\n" +
		"zookeeper.connect=localhost:2181\nauto.create.topics.enable=true\nsome.unknown.key=1\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(p, []string{"auto.create.topics.enable=false", "num.partitions = 6"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case c.NodeID != 3, c.NumPartitions != 6, c.AutoCreateTopics, c.MessageMaxBytes != 2000:
		t.Fatalf("%+v", c)
	case c.RetentionMs != 1000: // .ms wins over .hours whatever the order
		t.Fatalf("retention %d", c.RetentionMs)
	case !reflect.DeepEqual(c.LogDirs, []string{"/a", "/b"}):
		t.Fatalf("dirs %q", c.LogDirs)
	case c.Listeners[0] != (Listener{"PLAINTEXT", "0.0.0.0", 9093}):
		t.Fatalf("listeners %+v", c.Listeners)
	case c.AdvertisedListeners[0] != (Listener{"PLAINTEXT", "kafka.example", 19093}):
		t.Fatalf("advertised %+v", c.AdvertisedListeners)
	case c.Cluster.ZookeeperConnect != "localhost:2181":
		t.Fatalf("zookeeper.connect %q", c.Cluster.ZookeeperConnect)
	case !reflect.DeepEqual(c.Unknown, []string{"some.unknown.key"}):
		t.Fatalf("unknown %q", c.Unknown)
	}
	d := DefaultConfig()
	if d.Listeners[0].String() != DefaultListener || d.LogDirs[0] != "./data" || d.NumPartitions != 1 || !d.AutoCreateTopics ||
		d.MessageMaxBytes != 1048588 || d.SocketRequestMaxBytes != 104857600 {
		t.Fatalf("defaults %+v", d)
	}
	for _, bad := range []string{"num.partitions=0", "listeners=SSL://h:1", "listeners=nohostport", "node.id=x", "message.max.bytes=-1", "oops", "default.replication.factor=3"} {
		if _, err := LoadConfig("", []string{bad}, nil); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing"), nil, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("missing file: %v", err)
	}
}
