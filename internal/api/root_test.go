package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// A browser pointed at the server's address lands on the dashboard: GET / is
// a redirect to /ui/, and only GET (and HEAD) are; any other path stays a 404
// problem.
func TestRootLeadsToTheDashboard(t *testing.T) {
	c := newClient(t)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, c.base+"/", nil)
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/ui/" {
			t.Errorf("%s / = %d Location %q, want 302 to /ui/", method, res.StatusCode, res.Header.Get("Location"))
		}
	}

	// Followed, as a browser does, it is the dashboard's page.
	res, err := http.Get(c.base + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/ui/" || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET / followed: %d %s at %s, want the dashboard's HTML at /ui/", res.StatusCode, res.Header.Get("Content-Type"), res.Request.URL.Path)
	}

	c.do("POST", "/", "{}").wantProblem(t, http.StatusMethodNotAllowed, "method_not_allowed")
	c.do("GET", "/index.html", nil).wantProblem(t, http.StatusNotFound, "not_found")
}
