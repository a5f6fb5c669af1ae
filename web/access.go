package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"net/http"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// AccessConfig says who may use the server and what they may change. The
// zero value serves plain HTTP to anyone, with the lifecycle and admin
// endpoints off.
type AccessConfig struct {
	// WebConfigFile is an exporter-toolkit web config file (TLS, basic-auth
	// users, response headers); empty means none.
	WebConfigFile string
	// BearerToken, when set, is accepted as "Authorization: <BearerType>
	// <BearerToken>" besides any basic-auth user.
	BearerToken string
	// BearerType is the scheme of BearerToken; empty means Bearer.
	BearerType string
	// AuthExemptHealth leaves /-/healthy and /-/ready open when
	// authentication is configured, for load balancers and kubelets.
	AuthExemptHealth bool
	// EnableLifecycle allows POST /-/reload.
	EnableLifecycle bool
	// EnableAdminAPI allows the handlers mounted with HandleAdmin (those
	// that change state, such as creating and deleting silences).
	EnableAdminAPI bool
}

// Access is an AccessConfig compiled for serving: files read, hashes
// checked. Build it with NewAccess (which fails on a bad file, so a reload
// can keep the old one) and hand it to Options.Access or SetAccess.
type Access struct {
	cfg    AccessConfig
	web    *webConfig
	bearer [sha256.Size]byte // digest of the expected Authorization value

	// Bcrypt outcomes by digest of user and password. Right passwords and
	// wrong ones are kept apart: at most one right password per user can
	// exist, so a flood of wrong ones can fill and empty only the wrong
	// cache, never evict a real user's login.
	mu    sync.Mutex
	right map[[sha256.Size]byte]struct{}
	wrong map[[sha256.Size]byte]struct{}
}

// NewAccess reads and checks cfg's web config file. Its errors name the
// file and the key.
func NewAccess(cfg AccessConfig) (*Access, error) {
	a := &Access{cfg: cfg, web: &webConfig{}, right: map[[sha256.Size]byte]struct{}{}, wrong: map[[sha256.Size]byte]struct{}{}}
	if cfg.WebConfigFile != "" {
		wc, err := loadWebConfig(cfg.WebConfigFile)
		if err != nil {
			return nil, err
		}
		a.web = wc
	}
	if cfg.BearerToken != "" {
		if strings.EqualFold(cfg.BearerType, "basic") {
			return nil, errors.New("bearer token type must not be Basic: use basic_auth_users in the web config file")
		}
		a.bearer = sha256.Sum256([]byte(a.bearerType() + " " + cfg.BearerToken))
	}
	return a, nil
}

func (a *Access) bearerType() string {
	if a.cfg.BearerType == "" {
		return "Bearer"
	}
	return a.cfg.BearerType
}

// TLS reports whether the listener serves TLS under this access.
func (a *Access) TLS() bool { return a.web.tls != nil }

// AuthRequired reports whether requests must authenticate (users or a
// bearer token are configured).
func (a *Access) AuthRequired() bool { return len(a.web.users) > 0 || a.cfg.BearerToken != "" }

// maxCachedWrong bounds the cache of wrong passwords; past it that cache
// is emptied, so a flood of wrong passwords cannot grow memory.
const maxCachedWrong = 1024

// fakeHash is compared against for unknown users, so that a missing user
// costs as much time as a wrong password (no user enumeration by timing).
// It is bcrypt("fake password", cost 10).
var fakeHash = []byte("$2a$10$Zg2n21jISr5sbXDfG5fD6e9j4.ZW6r8Bhqt78mwSaAlyVsQlrWoY6")

// authenticate reports whether r carries valid credentials. Bcrypt runs at
// most once at a time across the server (sem) and its outcome is cached,
// so repeating a request costs a hash lookup, not a bcrypt round.
func (a *Access) authenticate(ctx context.Context, r *http.Request, sem chan struct{}) bool {
	if a.cfg.BearerToken != "" {
		if h := r.Header.Get("Authorization"); h != "" {
			typ, cred, _ := strings.Cut(h, " ")
			if strings.EqualFold(typ, a.bearerType()) {
				// Compare digests in constant time: neither the token nor
				// its length leaks through timing.
				got := sha256.Sum256([]byte(a.bearerType() + " " + cred))
				if subtle.ConstantTimeCompare(got[:], a.bearer[:]) == 1 {
					return true
				}
			}
		}
	}
	if len(a.web.users) == 0 {
		return false
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	hash, known := a.web.users[user]
	if !known {
		hash = fakeHash
	}
	key := sha256.Sum256([]byte(user + "\x00" + pass))
	a.mu.Lock()
	_, right := a.right[key]
	_, wrong := a.wrong[key]
	a.mu.Unlock()
	if right || wrong {
		return right && known
	}
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	ok = bcrypt.CompareHashAndPassword(hash, []byte(pass)) == nil && known
	<-sem
	a.mu.Lock()
	if ok {
		a.right[key] = struct{}{}
	} else {
		if len(a.wrong) >= maxCachedWrong {
			clear(a.wrong)
		}
		a.wrong[key] = struct{}{}
	}
	a.mu.Unlock()
	return ok
}

// challenge sets WWW-Authenticate for each scheme this access accepts.
func (a *Access) challenge(h http.Header) {
	if len(a.web.users) > 0 {
		h.Add("WWW-Authenticate", `Basic realm="seismo"`)
	}
	if a.cfg.BearerToken != "" {
		h.Add("WWW-Authenticate", a.bearerType()+` realm="seismo"`)
	}
}

// tlsConfig is the TLS config for new connections, nil for plain HTTP.
func (a *Access) tlsConfig() *tls.Config { return a.web.tls }
