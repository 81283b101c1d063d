package server

import (
	"errors"
	"testing"
)

// log.preallocate (broker) and preallocate (topic) reach segment.Options.
func TestPreallocateConfig(t *testing.T) {
	c, err := LoadConfig("", []string{"log.preallocate=true"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Preallocate || DefaultConfig().Preallocate {
		t.Fatalf("log.preallocate: got %v, default %v", c.Preallocate, DefaultConfig().Preallocate)
	}
	if _, err := LoadConfig("", []string{"log.preallocate=maybe"}, nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("bad log.preallocate: %v", err)
	}
	ts := &topicStore{cfg: c}
	o, err := ts.segmentOptions(nil)
	if err != nil || !o.Preallocate {
		t.Fatalf("broker default not applied: %v %v", o.Preallocate, err)
	}
	o, err = ts.segmentOptions(map[string]string{"preallocate": "false"})
	if err != nil || o.Preallocate {
		t.Fatalf("topic override not applied: %v %v", o.Preallocate, err)
	}
	if _, err := ts.segmentOptions(map[string]string{"preallocate": "yes please"}); !errors.Is(err, ErrConfig) {
		t.Fatalf("bad topic preallocate: %v", err)
	}
	if err := validateTopicConfigs(map[string]string{"preallocate": "nope"}, nil); err == nil {
		t.Fatal("validateTopicConfigs accepted preallocate=nope")
	}
	if err := validateTopicConfigs(map[string]string{"preallocate": "true"}, nil); err != nil {
		t.Fatal(err)
	}
}
