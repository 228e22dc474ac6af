"""What users attach: receiving uploads (streamed multipart, sniffed, stored, recorded), and the image
pipeline every provider shares (capability check, normalisation, variant cache, delivery, token estimates).

Imports ``security``, ``schemas``, ``storage``, ``persistence`` and the root modules; never ``runs``
or ``api``.
"""
