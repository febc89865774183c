// Package redact removes credentials from text. It is the one redactor used by
// logs, error messages, reports and the results store.
package redact

import (
	"regexp"
	"strings"
	"sync"
)

const mask = "xxxxx"

var (
	// key=value conninfo form: password=secret or password='se cret'.
	kvPassword = regexp.MustCompile(`(?i)(\b(?:password|sslpassword|pass|pwd)\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)`)
	// URL form: scheme://user:secret@host
	urlPassword = regexp.MustCompile(`(?i)([a-z][a-z0-9+.\-]*://[^:/@\s]*:)([^@\s]*)(@)`)
	// environment form: PGPASSWORD=secret
	envPassword = regexp.MustCompile(`(?i)(\bPGPASSWORD\s*=\s*)(\S+)`)
)

// Redactor masks known secrets and anything that looks like a password in a
// connection string. Safe for concurrent use.
type Redactor struct {
	mu      sync.RWMutex
	secrets []string
}

// New makes a redactor.
func New() *Redactor { return &Redactor{} }

// AddSecret registers a literal value (a password) that must never be shown.
// Values shorter than 4 bytes are ignored to avoid masking ordinary text.
func (r *Redactor) AddSecret(s string) {
	if r == nil || len(s) < 4 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, have := range r.secrets {
		if have == s {
			return
		}
	}
	r.secrets = append(r.secrets, s)
}

// String returns s with credentials masked.
func (r *Redactor) String(s string) string {
	s = Patterns(s)
	if r == nil {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, mask)
		}
	}
	return s
}

// Patterns masks password-shaped parts of s (conninfo, URL, PGPASSWORD=) without
// knowing the secret itself.
func Patterns(s string) string {
	if s == "" {
		return s
	}
	s = kvPassword.ReplaceAllString(s, "${1}"+mask)
	s = urlPassword.ReplaceAllString(s, "${1}"+mask+"${3}")
	s = envPassword.ReplaceAllString(s, "${1}"+mask)
	return s
}

// sensitiveSetting matches PostgreSQL setting names whose values may carry secrets.
var sensitiveSetting = regexp.MustCompile(`(?i)pass|secret|key|conninfo|token`)

// SettingValue returns value, or a mask when the setting's name says it may hold a secret.
func SettingValue(name, value string) string {
	if value != "" && sensitiveSetting.MatchString(name) {
		return mask
	}
	return value
}

// Mask is the text that replaces a secret.
func Mask() string { return mask }
