package loadbalancer

// AnnotationReference is annotationReference, for the reference's test.
var AnnotationReference = annotationReference
