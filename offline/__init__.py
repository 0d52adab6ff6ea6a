"""Support code for the course, not a lesson.

- `offline.server`: a scripted, local Messages API server that the real `anthropic`
  SDK talks to (tests and offline demos both use it).
- `offline.demo`: plays a chapter's scripted scenario when there is no API key.
- `offline.scenarios`: the scripted model turns of each chapter's demo.

No chapter's mechanism depends on this package: a chapter imports it only inside its
offline fallback, and reaches the server only through ANTHROPIC_BASE_URL, exactly as
it would reach a real provider.
"""
