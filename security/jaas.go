package security

import (
	"fmt"
	"strings"
)

// LoginModule is one entry of a JAAS configuration: the module's class,
// its control flag and its options, in the text's order.
type LoginModule struct {
	Class   string
	Flag    string // required, requisite, sufficient or optional
	Options map[string]string
}

// ParseJAAS parses a sasl.jaas.config value as Kafka's JaasConfig does:
// one or more "<class> <flag> (<name>=<value>)* ;" entries, where a value
// is a word or a double-quoted string (backslash escapes the next
// character inside quotes).
func ParseJAAS(text string) ([]LoginModule, error) {
	toks, err := jaasTokens(text)
	if err != nil {
		return nil, err
	}
	var out []LoginModule
	for i := 0; i < len(toks); {
		if toks[i].quoted || toks[i].s == ";" || toks[i].s == "=" {
			return nil, fmt.Errorf("%w: expected a login module class, got %q", ErrJAAS, toks[i].s)
		}
		m := LoginModule{Class: toks[i].s, Options: map[string]string{}}
		i++
		if i >= len(toks) || toks[i].quoted {
			return nil, fmt.Errorf("%w: %s: missing control flag", ErrJAAS, m.Class)
		}
		switch f := strings.ToLower(toks[i].s); f {
		case "required", "requisite", "sufficient", "optional":
			m.Flag = f
		default:
			return nil, fmt.Errorf("%w: %s: invalid control flag %q", ErrJAAS, m.Class, toks[i].s)
		}
		i++
		for {
			if i >= len(toks) {
				return nil, fmt.Errorf("%w: %s: entry not terminated by ';'", ErrJAAS, m.Class)
			}
			if !toks[i].quoted && toks[i].s == ";" {
				i++
				break
			}
			if toks[i].quoted || i+2 >= len(toks) || toks[i+1].quoted || toks[i+1].s != "=" {
				return nil, fmt.Errorf("%w: %s: expected option=value near %q", ErrJAAS, m.Class, toks[i].s)
			}
			v := toks[i+2]
			if !v.quoted && (v.s == ";" || v.s == "=") {
				return nil, fmt.Errorf("%w: %s: option %s has no value", ErrJAAS, m.Class, toks[i].s)
			}
			m.Options[toks[i].s] = v.s
			i += 3
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no login module", ErrJAAS)
	}
	return out, nil
}

type jaasToken struct {
	s      string
	quoted bool
}

func jaasTokens(text string) ([]jaasToken, error) {
	var out []jaasToken
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == ';' || c == '=':
			out = append(out, jaasToken{s: string(c)})
			i++
		case c == '"':
			var b strings.Builder
			i++
			for {
				if i >= len(text) {
					return nil, fmt.Errorf("%w: unterminated quoted value", ErrJAAS)
				}
				if text[i] == '\\' && i+1 < len(text) {
					b.WriteByte(text[i+1])
					i += 2
					continue
				}
				if text[i] == '"' {
					i++
					break
				}
				b.WriteByte(text[i])
				i++
			}
			out = append(out, jaasToken{s: b.String(), quoted: true})
		default:
			j := i
			for j < len(text) && !strings.ContainsRune(" \t\n\r\f;=\"", rune(text[j])) {
				j++
			}
			out = append(out, jaasToken{s: text[i:j]})
			i = j
		}
	}
	return out, nil
}

// PlainLoginModule is Kafka's PLAIN login module class.
const PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// PlainUsers returns the users a PLAIN JAAS config defines, as Kafka's
// PlainServerCallbackHandler reads them: each option user_<name>=<password>
// of the PlainLoginModule entries.
func PlainUsers(mods []LoginModule) (map[string]string, error) {
	users := map[string]string{}
	found := false
	for _, m := range mods {
		if m.Class != PlainLoginModule {
			continue
		}
		found = true
		for k, v := range m.Options {
			if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
				users[name] = v
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("%w: no %s entry", ErrJAAS, PlainLoginModule)
	}
	return users, nil
}

// ScramLoginModule is Kafka's SCRAM login module class.
const ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"

// ClientCredentials returns the username and password options of the
// first JAAS entry that has both, as Kafka's client-side callback handler
// reads them (a broker's own identity on the inter-broker listener, a
// tool's sasl.jaas.config).
func ClientCredentials(mods []LoginModule) (user, password string, err error) {
	for _, m := range mods {
		u, uok := m.Options["username"]
		p, pok := m.Options["password"]
		if uok && pok {
			return u, p, nil
		}
	}
	return "", "", fmt.Errorf("%w: no login module with username and password options", ErrJAAS)
}
