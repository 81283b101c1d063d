package security

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// PrincipalMapper is ssl.principal.mapping.rules (KIP-371): how a TLS
// client certificate's distinguished name (RFC 2253 form) becomes the
// user name of its principal. Rules are tried in order; the first that
// applies gives the name.
//
//	DEFAULT                       the distinguished name as it is
//	RULE:pattern/replacement/     when the regular expression matches the
//	RULE:pattern/replacement/L    whole name: the replacement ($1... name
//	RULE:pattern/replacement/U    groups), then lower or upper cased
//
// Rules are separated by commas (a pattern may hold commas: a rule ends at
// its third unescaped '/' and optional L or U); '\' escapes the next
// character of a pattern or replacement ("\/" is a slash). Patterns are Go
// regular expressions (RE2: Java's lookaround and possessive quantifiers are
// refused when the rules are parsed). An empty value is DEFAULT.
type PrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	def  bool
	re   *regexp.Regexp // anchored: must match the whole name
	repl string         // in regexp.Expand's template syntax
	fold byte           // 0, 'L' or 'U'
	text string
}

// ParsePrincipalMappingRules parses ssl.principal.mapping.rules.
func ParsePrincipalMappingRules(s string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{}
	rest := strings.TrimSpace(s)
	if rest == "" {
		m.rules = []mappingRule{{def: true, text: "DEFAULT"}}
		return m, nil
	}
	for rest != "" {
		var r mappingRule
		start := rest
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			r.def = true
			rest = rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			rest = rest[len("RULE:"):]
			pat, after, ok := cutUnescaped(rest)
			if !ok {
				return nil, fmt.Errorf("%w: %q: want RULE:pattern/replacement/[LU]", ErrMappingRule, start)
			}
			repl, after, ok := cutUnescaped(after)
			if !ok {
				return nil, fmt.Errorf("%w: %q: want RULE:pattern/replacement/[LU]", ErrMappingRule, start)
			}
			rest = after
			if rest != "" && (rest[0] == 'L' || rest[0] == 'U') {
				r.fold = rest[0]
				rest = rest[1:]
			}
			re, err := regexp.Compile(`^(?:` + pat + `)$`)
			if err != nil {
				return nil, fmt.Errorf("%w: %q: pattern: %w", ErrMappingRule, start, err)
			}
			r.re = re
			if r.repl, err = expandTemplate(repl, re.NumSubexp()); err != nil {
				return nil, fmt.Errorf("%w: %q: replacement: %w", ErrMappingRule, start, err)
			}
		default:
			return nil, fmt.Errorf("%w: %q: a rule is DEFAULT or RULE:pattern/replacement/[LU]", ErrMappingRule, rest)
		}
		rest = strings.TrimLeft(rest, " \t\r\n")
		if rest != "" && rest[0] != ',' && rest[0] != '\n' {
			return nil, fmt.Errorf("%w: %q: unexpected %q after the rule", ErrMappingRule, start, rest)
		}
		r.text = strings.TrimSpace(strings.TrimSuffix(start, rest))
		if rest != "" {
			rest = strings.TrimSpace(rest[1:])
			if rest == "" {
				return nil, fmt.Errorf("%w: %q: empty rule after ','", ErrMappingRule, s)
			}
		}
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// cutUnescaped splits s at its first '/' not escaped by '\', removing the
// escapes of "\/" (other escapes stay for the regular expression).
func cutUnescaped(s string) (before, after string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			if s[i+1] != '/' {
				b.WriteByte('\\')
			}
			b.WriteByte(s[i+1])
			i++
		case s[i] == '/':
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", false
}

// expandTemplate turns a Java replacement ($n groups, '\' escaping the
// next character) into regexp.Expand's template ($n as ${n}, '$' as $$).
// A '$' without a group number, or a group the pattern lacks, is an error
// (Java's replaceAll throws for both).
func expandTemplate(j string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(j); i++ {
		c := j[i]
		switch {
		case c == '\\' && i+1 < len(j):
			i++
			if j[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(j[i])
			}
		case c == '$':
			k := i + 1
			for k < len(j) && j[k] >= '0' && j[k] <= '9' {
				k++
			}
			if k == i+1 {
				return "", fmt.Errorf("'$' without a group number at %d of %q (write \\$ for a dollar sign)", i, j)
			}
			n, err := strconv.Atoi(j[i+1 : k])
			if err != nil || n > groups {
				return "", fmt.Errorf("group $%s of %q: the pattern has %d groups", j[i+1:k], j, groups)
			}
			b.WriteString("${" + j[i+1:k] + "}")
			i = k - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Map returns the user name of the distinguished name dn, or
// ErrNoMappingRule when no rule applies.
func (m *PrincipalMapper) Map(dn string) (string, error) {
	for _, r := range m.rules {
		if r.def {
			return dn, nil
		}
		sub := r.re.FindStringSubmatchIndex(dn)
		if sub == nil {
			continue
		}
		out := string(r.re.ExpandString(nil, r.repl, dn, sub))
		switch r.fold {
		case 'L':
			out = strings.ToLower(out)
		case 'U':
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w: to %q (rules %s)", ErrNoMappingRule, dn, m)
}

// String is the rules as parsed, comma separated.
func (m *PrincipalMapper) String() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		parts[i] = r.text
	}
	return strings.Join(parts, ", ")
}
