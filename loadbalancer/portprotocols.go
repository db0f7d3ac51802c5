package loadbalancer

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/quote"
)

// What each port of a Service speaks at the load balancer, port by port: the
// port-protocols annotation.

// portProtocolsValues are the values the port-protocols annotation allows.
const portProtocolsValues = "comma-separated entries, each the number or name of a Service port, ':', and one of TCP, TLS, HTTP, HTTPS; " +
	"for example `443: HTTPS, 8443: TLS`"

// portProtocol is one entry of the port-protocols annotation: the Service port it names
// (a number, canonical, or a name) and what the port speaks at the load balancer.
type portProtocol struct {
	port string
	app  cloudapi.AppProtocol
}

// parseAppProtocol returns the application protocol v names (TCP, TLS, HTTP, HTTPS, in any
// case): cloudapi.AppProtocolNone for TCP.
func parseAppProtocol(v string) (cloudapi.AppProtocol, error) {
	switch p := cloudapi.AppProtocol(strings.ToUpper(strings.TrimSpace(v))); p {
	case "TCP":
		return cloudapi.AppProtocolNone, nil
	case cloudapi.AppProtocolTLS, cloudapi.AppProtocolHTTP, cloudapi.AppProtocolHTTPS:
		return p, nil
	}
	return "", errors.New("not one of TCP, TLS, HTTP, HTTPS")
}

// parsePortProtocols parses the value of the port-protocols annotation, its entries
// sorted by port: two spellings that list the same entries in another order agree.
func parsePortProtocols(v string) ([]portProtocol, error) {
	var out []portProtocol
	for _, entry := range strings.Split(v, ",") {
		ref, proto, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("%s is not a port, ':' and a protocol", quote.Value(strings.TrimSpace(entry)))
		}
		port, err := parsePortRef(ref)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(e portProtocol) bool { return e.port == port }) {
			return nil, fmt.Errorf("port %s is named twice", port)
		}
		app, err := parseAppProtocol(proto)
		if err != nil {
			return nil, fmt.Errorf("port %s: %s: %w", port, quote.Value(strings.TrimSpace(proto)), err)
		}
		out = append(out, portProtocol{port: port, app: app})
	}
	slices.SortFunc(out, func(x, y portProtocol) int { return strings.Compare(x.port, y.port) })
	return out, nil
}

// portProtocol returns what the port-protocols annotation (spelled key) says the TCP port
// p speaks, and whether it names p (by number or name, which it records in named); an
// error when it names p twice, by its number and its name.
func (a parsedAnnotations) portProtocol(key string, p corev1.ServicePort, proto cloudapi.Protocol, named map[string]bool) (cloudapi.AppProtocol, bool, error) {
	if proto != cloudapi.ProtocolTCP {
		return "", false, nil
	}
	var found []portProtocol
	for _, e := range a.portProtocols {
		if e.port == strconv.Itoa(int(p.Port)) || (p.Name != "" && e.port == p.Name) {
			named[e.port] = true
			found = append(found, e)
		}
	}
	switch len(found) {
	case 0:
		return "", false, nil
	case 1:
		return found[0].app, true, nil
	}
	return "", false, fmt.Errorf("annotation %s names port %d/%s twice, as %s and %s: name it once", key, p.Port, proto, found[0].port, found[1].port)
}

// unnamedPortProtocols returns the problems of the port-protocols annotation's entries
// that name no TCP port of the Service (named: those that do).
func unnamedPortProtocols(prefix string, a parsedAnnotations, named map[string]bool) problems {
	var ps problems
	key := a.key(prefix, AnnotationPortProtocols)
	for _, e := range a.portProtocols {
		if !named[e.port] {
			ps = append(ps, problem{key: key, err: fmt.Errorf("annotation %s: the Service has no TCP port %s", key, e.port)})
		}
	}
	return ps
}
