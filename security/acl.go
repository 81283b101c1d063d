package security

import (
	"fmt"
	"sort"
	"strings"
)

// ResourceType is Kafka's ACL resource type, with its wire number.
type ResourceType int8

// Kafka's resource types.
const (
	ResourceAny             ResourceType = 1 // filters only
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
)

// ClusterName is the name of the one cluster resource.
const ClusterName = "kafka-cluster"

// PatternType is how a binding's resource name matches.
type PatternType int8

// Kafka's pattern types.
const (
	PatternAny      PatternType = 1 // filters only
	PatternMatch    PatternType = 2 // filters only: what would apply to a name
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is an ACL operation, with its wire number.
type Operation int8

// Kafka's operations.
const (
	OpAny             Operation = 1 // filters only
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
)

// Permission is allow or deny.
type Permission int8

// Kafka's permission types.
const (
	PermissionAny   Permission = 1 // filters only
	PermissionDeny  Permission = 2
	PermissionAllow Permission = 3
)

// Wildcards of a binding: any principal, any host, any resource name.
const (
	WildcardPrincipal = "User:*"
	WildcardHost      = "*"
	WildcardResource  = "*"
)

var resourceNames = map[ResourceType]string{ResourceTopic: "Topic", ResourceGroup: "Group", ResourceCluster: "Cluster",
	ResourceTransactionalID: "TransactionalId", ResourceDelegationToken: "DelegationToken"}

var opNames = map[Operation]string{OpAll: "All", OpRead: "Read", OpWrite: "Write", OpCreate: "Create", OpDelete: "Delete",
	OpAlter: "Alter", OpDescribe: "Describe", OpClusterAction: "ClusterAction", OpDescribeConfigs: "DescribeConfigs",
	OpAlterConfigs: "AlterConfigs", OpIdempotentWrite: "IdempotentWrite"}

func (r ResourceType) String() string { return nameOr(resourceNames[r], int8(r)) }
func (o Operation) String() string    { return nameOr(opNames[o], int8(o)) }
func (p Permission) String() string {
	switch p {
	case PermissionAllow:
		return "Allow"
	case PermissionDeny:
		return "Deny"
	}
	return nameOr("", int8(p))
}
func (p PatternType) String() string {
	switch p {
	case PatternLiteral:
		return "Literal"
	case PatternPrefixed:
		return "Prefixed"
	}
	return nameOr("", int8(p))
}

func nameOr(n string, v int8) string {
	if n == "" {
		return fmt.Sprintf("Unknown(%d)", v)
	}
	return n
}

// ParseResourceType, ParseOperation and ParsePermission read Kafka's names
// (case-insensitive; "TransactionalId", "ClusterAction", "Allow"...).
func ParseResourceType(s string) (ResourceType, bool) { return parseName(resourceNames, s) }

// ParseOperation reads an operation's name.
func ParseOperation(s string) (Operation, bool) { return parseName(opNames, s) }

// ParsePermission reads Allow or Deny.
func ParsePermission(s string) (Permission, bool) {
	switch strings.ToLower(s) {
	case "allow":
		return PermissionAllow, true
	case "deny":
		return PermissionDeny, true
	}
	return 0, false
}

func parseName[T comparable](m map[T]string, s string) (T, bool) {
	norm := strings.ReplaceAll(strings.ToLower(s), "_", "")
	for k, v := range m {
		if strings.ToLower(v) == norm {
			return k, true
		}
	}
	var zero T
	return zero, false
}

// ValidOperation says whether op applies to resources of type rt
// (Kafka's AclEntry.supportedOperations).
func ValidOperation(rt ResourceType, op Operation) bool {
	if op == OpAll {
		return true
	}
	switch rt {
	case ResourceTopic:
		return op == OpRead || op == OpWrite || op == OpCreate || op == OpDescribe || op == OpDelete || op == OpAlter || op == OpDescribeConfigs || op == OpAlterConfigs
	case ResourceGroup:
		return op == OpRead || op == OpDescribe || op == OpDelete
	case ResourceCluster:
		return op == OpCreate || op == OpClusterAction || op == OpDescribeConfigs || op == OpAlterConfigs || op == OpIdempotentWrite || op == OpAlter || op == OpDescribe
	case ResourceTransactionalID:
		return op == OpDescribe || op == OpWrite
	case ResourceDelegationToken:
		return op == OpDescribe
	}
	return false
}

// Binding is one ACL: a resource pattern and an access control entry.
type Binding struct {
	ResourceType ResourceType
	Name         string
	Pattern      PatternType // literal or prefixed
	Principal    string      // "User:alice" or "User:*"
	Host         string      // an address or "*"
	Operation    Operation
	Permission   Permission
}

func (b Binding) String() string {
	return fmt.Sprintf("(%s:%s:%s, %s from %s %s %s)", b.ResourceType, b.Pattern, b.Name, b.Principal, b.Host, b.Permission, b.Operation)
}

// Check says what is wrong with a binding to create: Kafka's checks on
// CreateAcls (a concrete type, pattern, operation and permission; a
// "Type:name" principal; the operation valid for the type; the cluster
// resource named kafka-cluster).
func (b Binding) Check() error {
	switch {
	case resourceNames[b.ResourceType] == "":
		return fmt.Errorf("invalid resource type %d", b.ResourceType)
	case b.Pattern != PatternLiteral && b.Pattern != PatternPrefixed:
		return fmt.Errorf("invalid pattern type %d: literal or prefixed", b.Pattern)
	case b.Name == "":
		return fmt.Errorf("empty resource name")
	case b.Pattern == PatternPrefixed && b.Name == WildcardResource:
		return fmt.Errorf("a prefixed pattern cannot be the wildcard '*'")
	case b.ResourceType == ResourceCluster && b.Name != ClusterName:
		return fmt.Errorf("the cluster resource is named %s", ClusterName)
	case opNames[b.Operation] == "":
		return fmt.Errorf("invalid operation %d", b.Operation)
	case !ValidOperation(b.ResourceType, b.Operation):
		return fmt.Errorf("operation %s does not apply to %s resources", b.Operation, b.ResourceType)
	case b.Permission != PermissionAllow && b.Permission != PermissionDeny:
		return fmt.Errorf("invalid permission type %d", b.Permission)
	case b.Host == "":
		return fmt.Errorf("empty host")
	}
	typ, name, ok := strings.Cut(b.Principal, ":")
	if !ok || typ == "" || name == "" {
		return fmt.Errorf("principal %q is not Type:name", b.Principal)
	}
	return nil
}

// Filter selects bindings (DescribeAcls, DeleteAcls): zero-value strings
// and the Any values match everything; PatternMatch matches the bindings
// that would apply to Name (literal equal, literal wildcard, prefixed
// prefix).
type Filter struct {
	ResourceType ResourceType
	Name         *string
	Pattern      PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Matches says whether b passes the filter.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	switch f.Pattern {
	case PatternAny:
		if f.Name != nil && *f.Name != b.Name {
			return false
		}
	case PatternMatch:
		if f.Name != nil && !patternMatches(b, *f.Name) {
			return false
		}
	default:
		if f.Pattern != b.Pattern || (f.Name != nil && *f.Name != b.Name) {
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == PermissionAny || f.Permission == b.Permission
}

func patternMatches(b Binding, name string) bool {
	if b.Pattern == PatternPrefixed {
		return strings.HasPrefix(name, b.Name)
	}
	return b.Name == name || b.Name == WildcardResource
}

// CheckFilter says what is wrong with a filter (Kafka refuses unknown
// values in DescribeAcls and DeleteAcls).
func (f Filter) CheckFilter() error {
	switch {
	case f.ResourceType != ResourceAny && resourceNames[f.ResourceType] == "":
		return fmt.Errorf("invalid resource type %d", f.ResourceType)
	case f.Pattern < PatternAny || f.Pattern > PatternPrefixed:
		return fmt.Errorf("invalid pattern type %d", f.Pattern)
	case f.Operation != OpAny && opNames[f.Operation] == "":
		return fmt.Errorf("invalid operation %d", f.Operation)
	case f.Permission < PermissionAny || f.Permission > PermissionAllow:
		return fmt.Errorf("invalid permission type %d", f.Permission)
	}
	return nil
}

// Authorizer decides requests with Kafka's AclAuthorizer semantics over an
// immutable set of bindings (build a new one for each change).
//
// For a principal, host, operation and resource: a super user is allowed;
// then the bindings that apply to the resource are those of its type whose
// pattern matches the name (literal equal, the literal wildcard "*", or a
// prefix); if there are none, allow.everyone.if.no.acl.found decides. A
// DENY binding for the principal (or User:*), the host (or *) and the
// operation (or All) refuses; otherwise an ALLOW binding for the principal,
// the host and the operation, All, or an operation that implies it allows:
// Read, Write, Delete and Alter imply Describe; AlterConfigs implies
// DescribeConfigs. Nothing else allows.
type Authorizer struct {
	SuperUsers   map[string]bool
	AllowIfNoACL bool
	byType       [8]typeIndex
	all          []Binding
	prefixLens   [8][]int
}

type typeIndex struct {
	literal  map[string][]Binding
	prefixed map[string][]Binding
}

// NewAuthorizer indexes bindings.
func NewAuthorizer(bindings []Binding, superUsers []string, allowIfNoACL bool) *Authorizer {
	a := &Authorizer{SuperUsers: map[string]bool{}, AllowIfNoACL: allowIfNoACL, all: append([]Binding(nil), bindings...)}
	for _, u := range superUsers {
		a.SuperUsers[u] = true
	}
	lens := [8]map[int]bool{}
	for _, b := range bindings {
		if b.ResourceType < 0 || int(b.ResourceType) >= len(a.byType) {
			continue
		}
		ti := &a.byType[b.ResourceType]
		if ti.literal == nil {
			ti.literal, ti.prefixed = map[string][]Binding{}, map[string][]Binding{}
			lens[b.ResourceType] = map[int]bool{}
		}
		if b.Pattern == PatternPrefixed {
			ti.prefixed[b.Name] = append(ti.prefixed[b.Name], b)
			lens[b.ResourceType][len(b.Name)] = true
		} else {
			ti.literal[b.Name] = append(ti.literal[b.Name], b)
		}
	}
	for t, m := range lens {
		for l := range m {
			a.prefixLens[t] = append(a.prefixLens[t], l)
		}
		sort.Ints(a.prefixLens[t])
	}
	return a
}

// Bindings are all the bindings, in the order given.
func (a *Authorizer) Bindings() []Binding { return a.all }

// Authorize decides one operation on one resource.
func (a *Authorizer) Authorize(principal, host string, op Operation, rt ResourceType, name string) bool {
	if a.SuperUsers[principal] {
		return true
	}
	if rt < 0 || int(rt) >= len(a.byType) {
		return false
	}
	ti := &a.byType[rt]
	if ti.literal == nil {
		return a.AllowIfNoACL
	}
	lists := [2][]Binding{ti.literal[name], ti.literal[WildcardResource]}
	found := len(lists[0]) > 0 || len(lists[1]) > 0
	allowed, denied := false, false
	scan := func(bs []Binding) {
		for i := range bs {
			b := &bs[i]
			if (b.Principal != principal && b.Principal != WildcardPrincipal) || (b.Host != host && b.Host != WildcardHost) {
				continue
			}
			if b.Permission == PermissionDeny {
				if b.Operation == op || b.Operation == OpAll {
					denied = true
				}
				continue
			}
			if b.Operation == op || b.Operation == OpAll || implies(b.Operation, op) {
				allowed = true
			}
		}
	}
	scan(lists[0])
	scan(lists[1])
	for _, l := range a.prefixLens[rt] {
		if l > len(name) {
			break
		}
		if bs := ti.prefixed[name[:l]]; len(bs) > 0 {
			found = true
			scan(bs)
		}
	}
	if !found {
		return a.AllowIfNoACL
	}
	return allowed && !denied
}

// implies says whether an ALLOW for have also allows want.
func implies(have, want Operation) bool {
	switch want {
	case OpDescribe:
		return have == OpRead || have == OpWrite || have == OpDelete || have == OpAlter
	case OpDescribeConfigs:
		return have == OpAlterConfigs
	}
	return false
}

// AuthorizeAny says whether principal may do op on at least one resource
// of type rt, as Kafka's authorizeByResourceType (KIP-679) decides it for
// InitProducerId without a transactional id: a super user may; a DENY of
// every resource (the literal "*" or the prefix "") refuses; otherwise an
// ALLOW binding that no DENY of the same literal name or of a prefix of
// its name cancels allows. With no binding of the type, AllowIfNoACL.
func (a *Authorizer) AuthorizeAny(principal, host string, op Operation, rt ResourceType) bool {
	if a.SuperUsers[principal] {
		return true
	}
	if rt < 0 || int(rt) >= len(a.byType) {
		return false
	}
	ti := &a.byType[rt]
	if ti.literal == nil {
		return a.AllowIfNoACL
	}
	applies := func(b *Binding) bool {
		return (b.Principal == principal || b.Principal == WildcardPrincipal) && (b.Host == host || b.Host == WildcardHost)
	}
	denies := func(bs []Binding) bool {
		for i := range bs {
			b := &bs[i]
			if applies(b) && b.Permission == PermissionDeny && (b.Operation == op || b.Operation == OpAll) {
				return true
			}
		}
		return false
	}
	if denies(ti.literal[WildcardResource]) || denies(ti.prefixed[""]) {
		return false
	}
	for i := range a.all {
		b := &a.all[i]
		if b.ResourceType != rt || !applies(b) || b.Permission == PermissionDeny ||
			(b.Operation != op && b.Operation != OpAll && !implies(b.Operation, op)) {
			continue
		}
		denied := b.Pattern != PatternPrefixed && denies(ti.literal[b.Name])
		for _, l := range a.prefixLens[rt] {
			if denied || l > len(b.Name) {
				break
			}
			denied = denies(ti.prefixed[b.Name[:l]])
		}
		if !denied {
			return true
		}
	}
	return false
}
