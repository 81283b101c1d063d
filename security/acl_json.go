package security

import (
	"encoding/json"
	"fmt"
)

// ACLEntryJSON is one entry of Kafka's ACL znode data.
type ACLEntryJSON struct {
	Principal      string `json:"principal"`
	PermissionType string `json:"permissionType"`
	Operation      string `json:"operation"`
	Host           string `json:"host"`
}

type aclZnode struct {
	Version int            `json:"version"`
	ACLs    []ACLEntryJSON `json:"acls"`
}

// ACLZnodePath is where Kafka keeps a resource's bindings in ZooKeeper:
// /kafka-acl/<Type>/<name> for literal patterns,
// /kafka-acl-extended/prefixed/<Type>/<name> for prefixed ones.
func ACLZnodePath(rt ResourceType, pattern PatternType, name string) string {
	if pattern == PatternPrefixed {
		return "/kafka-acl-extended/prefixed/" + rt.String() + "/" + name
	}
	return "/kafka-acl/" + rt.String() + "/" + name
}

// EncodeACLZnode is Kafka's znode data for a resource's bindings:
// {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
// "operation":"Read","host":"*"}]}.
func EncodeACLZnode(bs []Binding) []byte {
	z := aclZnode{Version: 1, ACLs: []ACLEntryJSON{}}
	for _, b := range bs {
		z.ACLs = append(z.ACLs, ACLEntryJSON{Principal: b.Principal, PermissionType: b.Permission.String(), Operation: b.Operation.String(), Host: b.Host})
	}
	out, _ := json.Marshal(z)
	return out
}

// DecodeACLZnode reads a resource's bindings from Kafka's znode data.
func DecodeACLZnode(rt ResourceType, pattern PatternType, name string, data []byte) ([]Binding, error) {
	var z aclZnode
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrACL, ACLZnodePath(rt, pattern, name), err)
	}
	if z.Version != 1 {
		return nil, fmt.Errorf("%w: %s: version %d", ErrACL, ACLZnodePath(rt, pattern, name), z.Version)
	}
	var out []Binding
	for _, e := range z.ACLs {
		op, ok1 := ParseOperation(e.Operation)
		perm, ok2 := ParsePermission(e.PermissionType)
		b := Binding{ResourceType: rt, Name: name, Pattern: pattern, Principal: e.Principal, Host: e.Host, Operation: op, Permission: perm}
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: %s: entry %+v", ErrACL, ACLZnodePath(rt, pattern, name), e)
		}
		if err := b.Check(); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrACL, ACLZnodePath(rt, pattern, name), err)
		}
		out = append(out, b)
	}
	return out, nil
}

// ACLFileResource is one resource of a single node's ACL file.
type ACLFileResource struct {
	ResourceType string         `json:"resourceType"`
	PatternType  string         `json:"patternType"`
	Name         string         `json:"name"`
	ACLs         []ACLEntryJSON `json:"acls"`
}

// ACLFile is a single node's ACLs: the same entries as Kafka's znodes,
// one element per resource.
type ACLFile struct {
	Version   int               `json:"version"`
	Resources []ACLFileResource `json:"resources"`
}

// EncodeACLFile groups bindings per resource into an ACLFile.
func EncodeACLFile(bs []Binding) []byte {
	f := ACLFile{Version: 1, Resources: []ACLFileResource{}}
	idx := map[[3]string]int{}
	for _, b := range bs {
		k := [3]string{b.ResourceType.String(), b.Pattern.String(), b.Name}
		i, ok := idx[k]
		if !ok {
			i = len(f.Resources)
			idx[k] = i
			f.Resources = append(f.Resources, ACLFileResource{ResourceType: k[0], PatternType: k[1], Name: k[2]})
		}
		f.Resources[i].ACLs = append(f.Resources[i].ACLs, ACLEntryJSON{Principal: b.Principal, PermissionType: b.Permission.String(), Operation: b.Operation.String(), Host: b.Host})
	}
	out, _ := json.MarshalIndent(f, "", "  ")
	return append(out, '\n')
}

// DecodeACLFile reads an ACLFile, checking every binding.
func DecodeACLFile(data []byte) ([]Binding, error) {
	var f ACLFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrACL, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("%w: version %d", ErrACL, f.Version)
	}
	var out []Binding
	for _, r := range f.Resources {
		rt, ok := ParseResourceType(r.ResourceType)
		pt := PatternLiteral
		switch r.PatternType {
		case "Literal":
		case "Prefixed":
			pt = PatternPrefixed
		default:
			ok = false
		}
		if !ok {
			return nil, fmt.Errorf("%w: resource %s %s", ErrACL, r.ResourceType, r.PatternType)
		}
		z, _ := json.Marshal(aclZnode{Version: 1, ACLs: r.ACLs})
		bs, err := DecodeACLZnode(rt, pt, r.Name, z)
		if err != nil {
			return nil, err
		}
		out = append(out, bs...)
	}
	return out, nil
}
