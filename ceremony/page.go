package ceremony

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"html/template"
	"net/http"
	"sync"

	"github.com/mcpepoch/mcpepoch/trust"
)

//go:embed page.html
var pageFS embed.FS

// pageTmpl is parsed on first use, not at start: most commands never
// render a page.
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseFS(pageFS, "page.html"))
})

// pageView is what page.html renders.
type pageView struct {
	Kind      string // "approval", "change", "policy" or "enrollment"
	Request   *Request
	Change    *changeView    // Kind "change": a trust store change to confirm
	Policy    *PolicyRequest // Kind "policy": weakenings of a policy floor to accept
	ShortCode string
	Name      string // enrollment: the authenticator's name
	FirstUse  bool   // enrollment: nothing enrolled yet
	Options   string // JSON of the ceremony's options for the browser
	Error     string // why the ceremony cannot start
	Nonce     string // CSP nonce of the page's script and style
	// Root is the trust store's root, shown beside the short code of an
	// approval or change: a presence approval proves no more than it.
	Root *rootView
}

// rootView is what the page shows of the root.
type rootView struct {
	Kind, Name, ID string
	Attested       string // "attested (FORMAT, VENDOR ROOT)", or "" when it is not
	Warning        string // trust.UnattestedWarning when it is not
}

// rootOf returns the view of s's root, nil for an empty store.
func rootOf(s *trust.Store) *rootView {
	r := s.Root()
	if r == nil {
		return nil
	}
	v := &rootView{Kind: r.Kind, Name: r.Name, ID: r.ID}
	if a := r.Attestation(); a.OK {
		v.Attested = a.String()
	} else {
		v.Warning = trust.UnattestedWarning
	}
	return v
}

// render writes the page with a Content-Security-Policy that allows only
// its own inline script and style and requests to itself.
func render(w http.ResponseWriter, v pageView) {
	n := make([]byte, 16)
	rand.Read(n)
	v.Nonce = base64.StdEncoding.EncodeToString(n)
	var b bytes.Buffer
	if err := pageTmpl().Execute(&b, v); err != nil {
		http.Error(w, "page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+v.Nonce+"'; style-src 'nonce-"+v.Nonce+"'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}
