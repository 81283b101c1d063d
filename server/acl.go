package server

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/security"
)

// ACLsFile holds a single node's ACLs in the first log dir (format:
// security.ACLFile, the entries of Kafka's /kafka-acl znodes grouped per
// resource).
const ACLsFile = "strata-acls.json"

// ZooKeeper paths of Kafka's ACLs (cluster mode).
const (
	zkACLLiteral         = "/kafka-acl"
	zkACLExtended        = "/kafka-acl-extended"
	zkACLPrefixed        = "/kafka-acl-extended/prefixed"
	zkACLChanges         = "/kafka-acl-changes"
	zkACLExtendedChanges = "/kafka-acl-extended-changes"
	zkACLChangePrefix    = "acl_changes_"
)

// Authorizer class names strata accepts in authorizer.class.name: Kafka's
// ZooKeeper-mode authorizers, both with AclAuthorizer's semantics.
var aclAuthorizerClasses = map[string]bool{
	"kafka.security.authorizer.AclAuthorizer": true,
	"kafka.security.auth.SimpleAclAuthorizer": true,
}

// aclEnabled says whether authorizer.class.name is set.
func (c *Config) aclEnabled() bool { return c.Security.get("", "authorizer.class.name", "") != "" }

// checkACLConfig checks authorizer.class.name, super.users and
// allow.everyone.if.no.acl.found.
func checkACLConfig(c *Config) error {
	if cls := c.Security.get("", "authorizer.class.name", ""); cls != "" && !aclAuthorizerClasses[cls] {
		return fmt.Errorf("authorizer.class.name %q: strata implements kafka.security.authorizer.AclAuthorizer only", cls)
	}
	switch v := strings.ToLower(c.Security.get("", "allow.everyone.if.no.acl.found", "false")); v {
	case "true", "false":
	default:
		return fmt.Errorf("allow.everyone.if.no.acl.found %q: want true or false", v)
	}
	for _, u := range c.superUsers() {
		if t, n, ok := strings.Cut(u, ":"); !ok || t == "" || n == "" {
			return fmt.Errorf("super.users: %q is not Type:name (User:alice)", u)
		}
	}
	return nil
}

// superUsers is super.users: principals separated by ';' (Kafka's
// separator, since a principal may contain ',').
func (c *Config) superUsers() []string {
	var out []string
	for _, u := range strings.Split(c.Security.get("", "super.users", ""), ";") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// aclStore holds the bindings and the authorizer built from them: the ACL
// file on a single node; in cluster mode Kafka's znodes, read again by
// every broker when a change notification appears under
// /kafka-acl-changes or /kafka-acl-extended-changes.
type aclStore struct {
	s     *Server
	auth  atomic.Pointer[security.Authorizer] // nil: no authorizer configured
	super []string
	open  bool // allow.everyone.if.no.acl.found

	mu sync.Mutex // serializes changes
}

func (s *Server) startACLs() error {
	if !s.cfg.aclEnabled() {
		s.acls = &aclStore{s: s}
		return nil
	}
	st := &aclStore{s: s, super: s.cfg.superUsers(),
		open: strings.EqualFold(s.cfg.Security.get("", "allow.everyone.if.no.acl.found", "false"), "true")}
	var bs []security.Binding
	var err error
	if s.cl != nil {
		if err = st.zkEnsurePaths(); err == nil {
			bs, err = st.zkLoad()
		}
		if err != nil {
			return fmt.Errorf("%w: ACLs: %w", ErrCluster, err)
		}
		s.bgWG.Add(1)
		go st.zkWatch()
	} else if bs, err = st.fileLoad(); err != nil {
		return fmt.Errorf("%w: %w", ErrDataDir, err)
	}
	st.auth.Store(security.NewAuthorizer(bs, st.super, st.open))
	s.acls = st
	s.log.Info("ACL authorizer on", "bindings", len(bs), "super_users", st.super, "allow_everyone_if_no_acl_found", st.open)
	return nil
}

func (st *aclStore) path() string { return filepath.Join(st.s.cfg.LogDirs[0], ACLsFile) }

func (st *aclStore) fileLoad() ([]security.Binding, error) {
	b, err := readFile(st.s.topics.fs, st.path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	bs, err := security.DecodeACLFile(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", st.path(), err)
	}
	return bs, nil
}

// authorize decides one operation of a connection's principal.
func (st *aclStore) authorize(c *conn, op security.Operation, rt security.ResourceType, name string) bool {
	a := st.auth.Load()
	if a == nil {
		return true
	}
	return a.Authorize(c.auth.principal, c.ip, op, rt, name)
}

// authorizeAny says whether c's principal may do op on some resource of
// type rt (security.Authorizer.AuthorizeAny).
func (st *aclStore) authorizeAny(c *conn, op security.Operation, rt security.ResourceType) bool {
	a := st.auth.Load()
	if a == nil {
		return true
	}
	return a.AuthorizeAny(c.auth.principal, c.ip, op, rt)
}

// enabled says whether requests are authorized.
func (st *aclStore) enabled() bool { return st.auth.Load() != nil }

// change applies additions and the removal of the bindings del selects,
// stores the result and swaps the authorizer. It returns what each filter
// removed.
func (st *aclStore) change(add []security.Binding, del []security.Filter) ([][]security.Binding, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	cur := st.auth.Load().Bindings()
	if st.s.cl != nil { // another broker may have changed them
		fresh, err := st.zkLoad()
		if err != nil {
			return nil, err
		}
		cur = fresh
	}
	removed := make([][]security.Binding, len(del))
	var next []security.Binding
	touched := map[[3]string]bool{}
	key := func(b security.Binding) [3]string {
		return [3]string{b.ResourceType.String(), b.Pattern.String(), b.Name}
	}
	for _, b := range cur {
		gone := false
		for i, f := range del {
			if f.Matches(b) {
				removed[i] = append(removed[i], b)
				gone = true
			}
		}
		if gone {
			touched[key(b)] = true
			continue
		}
		next = append(next, b)
	}
	for _, b := range add {
		dup := false
		for _, o := range next {
			dup = dup || o == b
		}
		if !dup {
			next = append(next, b)
			touched[key(b)] = true
		}
	}
	var err error
	if st.s.cl != nil {
		err = st.zkStore(next, touched)
	} else {
		err = fsutil.WriteFileAtomic(st.s.topics.fs, st.path(), security.EncodeACLFile(next))
	}
	if err != nil {
		return nil, err
	}
	st.auth.Store(security.NewAuthorizer(next, st.super, st.open))
	return removed, nil
}

// zkEnsurePaths creates Kafka's ACL znodes' parents.
func (st *aclStore) zkEnsurePaths() error {
	zk := st.s.cl.zk
	paths := []string{zkACLLiteral, zkACLExtended, zkACLPrefixed, zkACLChanges, zkACLExtendedChanges}
	for _, rt := range []security.ResourceType{security.ResourceTopic, security.ResourceGroup, security.ResourceCluster, security.ResourceTransactionalID, security.ResourceDelegationToken} {
		paths = append(paths, zkACLLiteral+"/"+rt.String(), zkACLPrefixed+"/"+rt.String())
	}
	for _, p := range paths {
		if _, err := zk.Create(p, nil, cluster.Persistent); err != nil && !errors.Is(err, cluster.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

// zkLoad reads every binding under /kafka-acl and
// /kafka-acl-extended/prefixed.
func (st *aclStore) zkLoad() ([]security.Binding, error) {
	zk := st.s.cl.zk
	var out []security.Binding
	for _, base := range []struct {
		root    string
		pattern security.PatternType
	}{{zkACLLiteral, security.PatternLiteral}, {zkACLPrefixed, security.PatternPrefixed}} {
		types, _, err := zk.Children(base.root)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", base.root, err)
		}
		for _, tn := range types {
			rt, ok := security.ParseResourceType(tn)
			if !ok {
				continue // "prefixed" under /kafka-acl-extended, or a type strata does not know
			}
			names, _, err := zk.Children(base.root + "/" + tn)
			if err != nil {
				return nil, err
			}
			for _, n := range names {
				data, _, err := zk.Get(base.root + "/" + tn + "/" + n)
				if errors.Is(err, cluster.ErrNoNode) {
					continue
				}
				if err != nil {
					return nil, err
				}
				bs, err := security.DecodeACLZnode(rt, base.pattern, n, data)
				if err != nil {
					st.s.log.Error("ignoring an ACL znode that does not parse", "error", err)
					continue
				}
				out = append(out, bs...)
			}
		}
	}
	return out, nil
}

// zkStore writes the touched resources' znodes (deleting the emptied ones)
// and a change notification for each, as Kafka's AclAuthorizer does.
func (st *aclStore) zkStore(all []security.Binding, touched map[[3]string]bool) error {
	zk := st.s.cl.zk
	per := map[[3]string][]security.Binding{}
	for _, b := range all {
		k := [3]string{b.ResourceType.String(), b.Pattern.String(), b.Name}
		if touched[k] {
			per[k] = append(per[k], b)
		}
	}
	for k := range touched {
		rt, _ := security.ParseResourceType(k[0])
		pt := security.PatternLiteral
		changes := zkACLChanges
		if k[1] == security.PatternPrefixed.String() {
			pt, changes = security.PatternPrefixed, zkACLExtendedChanges
		}
		p := security.ACLZnodePath(rt, pt, k[2])
		var err error
		if bs := per[k]; len(bs) == 0 {
			if err = zk.Delete(p, -1); errors.Is(err, cluster.ErrNoNode) {
				err = nil
			}
		} else if _, err = zk.Set(p, security.EncodeACLZnode(bs), -1); errors.Is(err, cluster.ErrNoNode) {
			_, err = zk.Create(p, security.EncodeACLZnode(bs), cluster.Persistent)
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		note := k[0] + ":" + k[2]
		if pt == security.PatternPrefixed {
			note = fmt.Sprintf(`{"version":1,"resourceType":%q,"name":%q,"patternType":"Prefixed"}`, k[0], k[2])
		}
		if _, err := zk.Create(changes+"/"+zkACLChangePrefix, []byte(note), cluster.PersistentSequential); err != nil {
			return fmt.Errorf("notify %s: %w", changes, err)
		}
	}
	return nil
}

// zkWatch reloads the bindings whenever a change notification appears,
// so ACLs created through any broker apply on every broker.
func (st *aclStore) zkWatch() {
	defer st.s.bgWG.Done()
	zk := st.s.cl.zk
	for {
		_, _, w1, err1 := zk.ChildrenW(zkACLChanges)
		_, _, w2, err2 := zk.ChildrenW(zkACLExtendedChanges)
		if err := errors.Join(err1, err2); err == nil {
			if bs, err := st.zkLoad(); err == nil {
				st.mu.Lock()
				st.auth.Store(security.NewAuthorizer(bs, st.super, st.open))
				st.mu.Unlock()
			} else {
				st.s.log.Error("reloading ACLs from ZooKeeper", "error", err)
			}
		} else {
			st.s.log.Warn("watching ACL changes", "error", err)
			select {
			case <-st.s.done:
				return
			case <-time.After(time.Second):
			}
			continue
		}
		select {
		case <-st.s.done:
			return
		case <-w1:
		case <-w2:
		}
	}
}
