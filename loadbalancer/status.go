package loadbalancer

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/apivalid"
	"github.com/ccmkit/ccmkit/internal/quote"
)

// status is the Service status of a load balancer:
//   - hostname alone, the name of the Service's hostname annotation when it has a valid one: kube-proxy
//     then has no address to short-circuit and sends in-cluster traffic through the load
//     balancer;
//   - else one ingress per address, with ipMode Proxy when the load balancer sends the
//     PROXY protocol (kube-proxy must then not short-circuit in-cluster traffic to the
//     address), VIP otherwise; a hostname the cloud reports beside addresses is not
//     published, so that every ingress is one address (a DNS controller publishing the
//     status would otherwise mix address and alias records for one name);
//   - else the cloud's hostname, for clouds whose load balancers are reached by name.
//
// What the cloud reports that the API server would refuse in the status (an address that
// apivalid.IP refuses, a hostname that checkHostname refuses) is left out and described in
// refused, its value quoted to a bound. When that leaves nothing to publish, the status
// is an error, never an empty status, which would read as "no load balancer".
func status(hostname string, lb *cloudapi.LoadBalancer) (_ *corev1.LoadBalancerStatus, refused []string, _ error) {
	if h := hostname; h != "" {
		return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: h}}}, nil, nil
	}
	st := &corev1.LoadBalancerStatus{}
	if len(lb.Addresses) == 0 && lb.Hostname != "" {
		if err := checkHostname(lb.Hostname); err != nil {
			refused = append(refused, fmt.Sprintf("the hostname %s (%v)", quote.Value(lb.Hostname), err))
		} else {
			st.Ingress = append(st.Ingress, corev1.LoadBalancerIngress{Hostname: lb.Hostname})
		}
	}
	mode := corev1.LoadBalancerIPModeVIP
	if lb.Spec.ProxyProtocol {
		mode = corev1.LoadBalancerIPModeProxy
	}
	for _, a := range lb.Addresses {
		if err := apivalid.IP(a); err != nil {
			refused = append(refused, fmt.Sprintf("the address %s (%v)", quote.Value(a), err))
			continue
		}
		m := mode
		st.Ingress = append(st.Ingress, corev1.LoadBalancerIngress{IP: a, IPMode: &m})
	}
	if len(st.Ingress) == 0 && len(refused) > 0 {
		return nil, refused, fmt.Errorf("load balancer %s: the cloud reports nothing a Service's status can hold: %s", lb.ID, listRefused(refused))
	}
	return st, refused, nil
}

// maxRefusedListed is how many of the values the status leaves out an error or event
// lists; it says how many more there are.
const maxRefusedListed = 3

// listRefused joins what status refused, at most maxRefusedListed of them.
func listRefused(refused []string) string {
	if len(refused) <= maxRefusedListed {
		return strings.Join(refused, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(refused[:maxRefusedListed], ", "), len(refused)-maxRefusedListed)
}

// publish is status for EnsureLoadBalancer, which reports what the status leaves out: a
// Warning event AddressNotPublished on the Service naming the load balancer and the
// values, whether the rest is published or the status is an error.
func (r *reporter) publish(logger klog.Logger, svc *corev1.Service, hostname string, lb *cloudapi.LoadBalancer) (*corev1.LoadBalancerStatus, error) {
	st, refused, err := status(hostname, lb)
	if len(refused) > 0 {
		logger.Info("Not publishing what the cloud reports and a Service's status cannot hold", "loadBalancer", lb.ID, "refused", len(refused), "published", st != nil)
		r.event(svc, corev1.EventTypeWarning, "AddressNotPublished", fmt.Sprintf("Load balancer %s: the cloud reports %s, which a Service's status cannot hold: not published",
			lb.ID, listRefused(refused)))
	}
	return st, err
}
