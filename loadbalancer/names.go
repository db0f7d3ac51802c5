package loadbalancer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// The cloud names of a cluster's resources: a Service's load balancer (defaultName), a
// share's (shareName), a share's once released (keptName), the target groups' (package
// internal/targetgroups, after namePrefix). Names are for humans and the cloud's
// uniqueness rules; ownership is by tags. For any cluster ID, each is a name the name
// annotation accepts (at most maxNameLength lower-case letters, digits and '-', beginning
// and ending with a letter or digit, nameRE), and two clusters' names differ (namePrefix).

// maxPrefixLength is the longest namePrefix: the default and share names (34 characters
// after it) stay within maxNameLength.
const maxPrefixLength = 24

// prefixHashBytes is how many bytes of the SHA-256 of the cluster ID end a namePrefix
// that is not the cluster ID itself.
const prefixHashBytes = 4

// keptHashBytes is how many bytes of the SHA-256 of the load balancer's ID end a
// keptName.
const keptHashBytes = 8

// defaultName is the cloud name of the Service's load balancer without a name annotation:
// the cluster's namePrefix and the Service UID, so that it is unique, stable and within
// maxNameLength characters.
func defaultName(clusterID string, svc *corev1.Service) string {
	uid := strings.ReplaceAll(string(svc.UID), "-", "")
	return namePrefix(clusterID) + "-a" + uid
}

// namePrefix begins the cloud names of the cluster's resources: the cluster ID itself
// when it is a valid name of at most maxPrefixLength characters; else the ID folded into
// a name (lower case, '-' for any character but a letter or digit), shortened, and a hash
// of the whole ID. Folding and shortening alone would give two clusters whose IDs differ
// only in case, punctuation or after the first characters the same share and target
// group names, and each cluster's creates would conflict with the other's.
func namePrefix(clusterID string) string {
	if len(clusterID) <= maxPrefixLength && nameRE.MatchString(clusterID) {
		return clusterID
	}
	sum := sha256.Sum256([]byte(clusterID))
	hash := hex.EncodeToString(sum[:prefixHashBytes])
	folded := strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, strings.ToLower(clusterID)) // every rune one byte
	folded = strings.Trim(folded[:min(len(folded), maxPrefixLength-1-len(hash))], "-")
	if folded == "" {
		return hash
	}
	return folded + "-" + hash
}

// keptName is the name of a share's load balancer named name once it is released
// (keep-on-delete), so that the share's next load balancer can take the share's name: name
// shortened (at a character's boundary) and "-kept" with a hash of the load balancer's
// cloud ID id, within maxNameLength characters, unique by the ID and never name itself
// (not even when name is already such a name); "" for "" (a cloud that keeps no names).
// A valid name keeps a valid name.
func keptName(name, id string) string {
	if name == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	suffix := "-kept" + hex.EncodeToString(sum[:keptHashBytes])
	keep := min(len(name), maxNameLength-len(suffix))
	if name[:keep]+suffix == name {
		keep-- // name is its own kept name: one character shorter is another name
	}
	for keep > 0 && keep < len(name) && !utf8.RuneStart(name[keep]) {
		keep--
	}
	return name[:keep] + suffix
}

// nameTakenAdvice is what the error of a create the cloud refused as a conflict advises
// when the Service's owner (see owner) has no load balancer: the name or a requested
// address is another load balancer's, perhaps one kept by keep-on-delete. A Service of
// its own may adopt that one; a share may not (its Services cannot name a load balancer
// by ID), and its own kept load balancers were renamed (keptName), so what stands in its
// way is another's name or a kept one's addresses.
func (p *planner) nameTakenAdvice(svc *corev1.Service, owner string) string {
	name, ips := p.intents.key(svc, AnnotationName), p.intents.key(svc, AnnotationIPAddresses)
	if isShare(owner) {
		return fmt.Sprintf("no load balancer of this share exists, so the name or a requested address belongs to another: choose another with annotation %s or %s on every Service of the share, or free it in the cloud; a share cannot adopt a load balancer: one kept by keep-on-delete, which keeps its addresses, must be deleted in the cloud or adopted by a Service in no share",
			name, ips)
	}
	return fmt.Sprintf("no load balancer of this service exists, so the name or a requested address belongs to another: choose another with annotation %s or %s, or, if it is a load balancer kept by keep-on-delete, adopt it with annotation %s",
		name, ips, p.intents.key(svc, AnnotationLoadBalancerID))
}
