package cloudapi_test

import (
	"fmt"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// A resource of a cloud with plain-string tags, tagged by a provisioner (k8s, k8s:prod)
// and by its owner (web), gets ccmkit's tags written beside theirs and read back.
func ExampleEncodeTagSetKeeping() {
	rules := cloudapi.DigitalOceanTagRules
	current := []string{"k8s", "k8s:prod", "web"}
	set, err := cloudapi.EncodeTagSetKeeping(map[string]string{cloudapi.TagCluster: "prod", "web": ""}, current, rules)
	if err != nil {
		panic(err)
	}
	fmt.Println(set)
	tags, err := cloudapi.DecodeTagSet(set, rules)
	fmt.Println(tags[cloudapi.TagCluster], len(tags))
	fmt.Println(err)
	// Output:
	// [b32-mnrw223joqxgs3zpmnwhk43umvza:prod k8s k8s:prod web]
	// prod 2
	// key "k8s" left out of the tags: it holds 2 values ["" "prod"], which read as none
}
