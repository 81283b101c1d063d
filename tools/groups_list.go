package tools

import (
	"context"
	"fmt"
)

// listedGroupJSON is one group of --list --json.
type listedGroupJSON struct {
	Group        string `json:"group"`
	State        string `json:"state,omitempty"`
	ProtocolType string `json:"protocol_type,omitempty"`
	Coordinator  int32  `json:"coordinator"`
}

// list is --list: ListGroups on every broker.
func (r *groupsRun) list(ctx context.Context) error {
	listed, err := r.adm.ListGroups(ctx)
	if err != nil {
		return brokerErr("list groups", err)
	}
	groups := listed.Sorted()
	if r.json {
		out := make([]listedGroupJSON, 0, len(groups))
		for _, g := range groups {
			out = append(out, listedGroupJSON{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator})
		}
		return writeJSON(r.w, out)
	}
	if r.c.Bool("state") {
		t := newTable("GROUP", "STATE")
		for _, g := range groups {
			t.add(g.Group, dash(g.State))
		}
		return t.write(r.w)
	}
	for _, g := range groups {
		if _, err := fmt.Fprintln(r.w, g.Group); err != nil {
			return failErr(err)
		}
	}
	return nil
}
