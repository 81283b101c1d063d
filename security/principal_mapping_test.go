package security

import (
	"errors"
	"testing"
)

// TestPrincipalMappingKafkaExamples: the rules and names of Kafka's
// documentation ("Customizing SSL User Name") and of KIP-371, and the
// parser's edge cases: commas inside patterns, escaped slashes, L/U, the
// first matching rule winning, DEFAULT last, no rule applying.
func TestPrincipalMappingKafkaExamples(t *testing.T) {
	docRules := `RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,
RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,
RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,
DEFAULT`
	for _, tc := range []struct {
		rules, dn, want string
	}{
		// Kafka's documentation
		{docRules, "CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "serviceuser"},
		{docRules, "CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "adminuser@admin"},
		{docRules, "OU=x,cn=Some.Host", "some.host"},
		{docRules, "O=NoCommonName", "O=NoCommonName"},
		// KIP-371's examples
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "CN=kafka-broker,OU=ServiceUsers,O=Acme", "kafka-broker"},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U", "CN=duke,OU=JavaSoft,O=Sun Microsystems,L=Cupertino,ST=CA,C=US", "DUKE@JAVASOFT"},
		{"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/,DEFAULT", "CN=duke,OU=JavaSoft", "duke"},
		{"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/,DEFAULT", "CN=Duke,OU=JavaSoft", "CN=Duke,OU=JavaSoft"},
		// an escaped slash in the replacement and in the pattern
		{`RULE:^CN=(.*?),OU=(.*?)$/$1\/$2/`, "CN=a,OU=b", "a/b"},
		{`RULE:^CN=(.*?)\/(.*?)$/$2/`, "CN=a/b", "b"},
		// whitespace around rules; an empty value is DEFAULT
		{"  DEFAULT  ", "CN=x", "CN=x"},
		{"", "CN=x", "CN=x"},
		// the first rule that applies wins
		{"RULE:^CN=(.*)$/$1/L, RULE:^CN=(.*)$/$1/U", "CN=MiXed", "mixed"},
		{"DEFAULT, RULE:^CN=(.*)$/$1/", "CN=x", "CN=x"},
		// a literal dollar sign
		{`RULE:^CN=(.*)$/\$$1/`, "CN=x", "$x"},
	} {
		m, err := ParsePrincipalMappingRules(tc.rules)
		if err != nil {
			t.Errorf("%q: %v", tc.rules, err)
			continue
		}
		got, err := m.Map(tc.dn)
		if err != nil || got != tc.want {
			t.Errorf("%q on %q: %q %v, want %q", tc.rules, tc.dn, got, err, tc.want)
		}
	}
	m, err := ParsePrincipalMappingRules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Map("CN=x,OU=Other"); !errors.Is(err, ErrNoMappingRule) {
		t.Fatalf("no rule applies: %q %v", got, err)
	}
}

// TestPrincipalMappingBadRules: malformed rules (Kafka's invalid examples
// and RE2's limits) are refused with ErrMappingRule.
func TestPrincipalMappingBadRules(t *testing.T) {
	for _, rules := range []string{
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/X",
		"DEFAULT,",
		"DEFAULT,,DEFAULT",
		"RULE:^CN=(?=x).*$/$1/", // lookahead: not RE2
		"RULE:^CN=(.*$/$1/",     // unbalanced
		"RULE:^CN=(.*)$/$2/",    // no group 2
		"RULE:^CN=(.*)$/$x/",    // '$' without a group number
	} {
		if m, err := ParsePrincipalMappingRules(rules); !errors.Is(err, ErrMappingRule) {
			t.Errorf("%q accepted: %v %v", rules, m, err)
		}
	}
}
