package loadbalancer

// AnnotationReference is annotationReference, for the README's test.
var AnnotationReference = annotationReference
