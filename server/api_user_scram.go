package server

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/security"
)

// handleDescribeUserScram answers DescribeUserScramCredentials (v0): each
// user's mechanisms and iteration counts (never salts or keys), every
// user with a credential when the list is null, RESOURCE_NOT_FOUND for a
// user without one and DUPLICATE_RESOURCE for a user named twice, as Kafka.
func (s *Server) handleDescribeUserScram(r *kmsg.DescribeUserSCRAMCredentialsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	var names []string
	if r.Users == nil {
		all, err := s.sec.scram.listUsers()
		if err != nil {
			resp.ErrorCode = kerr.UnknownServerError.Code
			msg := err.Error()
			resp.ErrorMessage = &msg
			return resp
		}
		names = all
	} else {
		for _, u := range r.Users {
			names = append(names, u.Name)
		}
	}
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	done := map[string]bool{}
	for _, name := range names {
		if done[name] {
			continue
		}
		done[name] = true
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = name
		fail := func(e *kerr.Error, msg string) {
			res.ErrorCode, res.ErrorMessage = e.Code, &msg
		}
		cfg, err := s.sec.scram.userConfig(name)
		switch {
		case count[name] > 1:
			fail(kerr.DuplicateResource, "Cannot describe SCRAM credentials for the same user twice in a single request: "+name)
		case err != nil:
			fail(kerr.UnknownServerError, err.Error())
		default:
			for _, mt := range []int8{1, 2} {
				m, _ := security.ScramMechanismByType(mt)
				text, ok := cfg[m.Name]
				if !ok {
					continue
				}
				c, err := security.ParseScramCredential(text)
				if err != nil {
					continue
				}
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = mt, int32(c.Iterations)
				res.CredentialInfos = append(res.CredentialInfos, ci)
			}
			if len(res.CredentialInfos) == 0 {
				if r.Users == nil {
					continue
				}
				fail(kerr.ResourceNotFound, "Attempt to describe a user credential that does not exist: "+name)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// handleAlterUserScram answers AlterUserScramCredentials (v0). Each
// user's deletions and upsertions are checked first (a known mechanism,
// Kafka's iteration bounds 4096-16384, a salt and a salted password, no
// mechanism named twice for a user) and applied together or not at all;
// the broker derives StoredKey and ServerKey from the salted password the
// client sent, and stores them as Kafka does.
func (s *Server) handleAlterUserScram(r *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	type change struct {
		set  map[string]security.ScramCredential
		del  []string
		seen map[string]bool
		err  *kerr.Error
		msg  string
	}
	users := map[string]*change{}
	var order []string
	get := func(name string) *change {
		ch := users[name]
		if ch == nil {
			ch = &change{set: map[string]security.ScramCredential{}, seen: map[string]bool{}}
			users[name] = ch
			order = append(order, name)
		}
		return ch
	}
	refuse := func(ch *change, e *kerr.Error, f string, a ...any) {
		if ch.err == nil {
			ch.err, ch.msg = e, fmt.Sprintf(f, a...)
		}
	}
	note := func(ch *change, name string, mt int8) (security.ScramMechanism, bool) {
		m, ok := security.ScramMechanismByType(mt)
		switch {
		case name == "":
			refuse(ch, kerr.UnacceptableCredential, "Username must not be empty")
		case !ok:
			refuse(ch, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism %d", mt)
		case ch.seen[m.Name]:
			refuse(ch, kerr.DuplicateResource, "A user credential cannot be altered twice in the same request: %s %s", name, m.Name)
		default:
			ch.seen[m.Name] = true
			return m, true
		}
		return m, false
	}
	for _, d := range r.Deletions {
		ch := get(d.Name)
		if m, ok := note(ch, d.Name, d.Mechanism); ok {
			ch.del = append(ch.del, m.Name)
		}
	}
	for _, u := range r.Upsertions {
		ch := get(u.Name)
		m, ok := note(ch, u.Name, u.Mechanism)
		if !ok {
			continue
		}
		switch {
		case u.Iterations < security.ScramMinIterations:
			refuse(ch, kerr.UnacceptableCredential, "Too few iterations: %d (at least %d)", u.Iterations, security.ScramMinIterations)
		case u.Iterations > security.ScramMaxIterations:
			refuse(ch, kerr.UnacceptableCredential, "Too many iterations: %d (at most %d)", u.Iterations, security.ScramMaxIterations)
		case len(u.Salt) == 0:
			refuse(ch, kerr.UnacceptableCredential, "Salt is empty")
		case len(u.SaltedPassword) == 0:
			refuse(ch, kerr.UnacceptableCredential, "Salted password is empty")
		default:
			ch.set[m.Name] = m.CredentialFromSalted(u.SaltedPassword, u.Salt, int(u.Iterations))
		}
	}
	for _, name := range order {
		ch := users[name]
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = name
		if ch.err == nil {
			ok, err := s.sec.scram.alter(name, ch.set, ch.del)
			switch {
			case err != nil:
				s.log.Error("storing SCRAM credentials", "user", name, "error", err)
				ch.err, ch.msg = kerr.UnknownServerError, err.Error()
			case !ok:
				ch.err, ch.msg = kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist"
			default:
				s.log.Info("SCRAM credentials altered", "user", name, "upserted", len(ch.set), "deleted", ch.del)
			}
		}
		if ch.err != nil {
			msg := ch.msg
			res.ErrorCode, res.ErrorMessage = ch.err.Code, &msg
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}
