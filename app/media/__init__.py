"""What users attach: receiving uploads (streamed multipart, sniffed, stored, recorded; images, PDFs read
in a bounded PDFium worker process, WAV/MP3 parsed by our own code), and the image
pipeline every provider shares (capability check, normalisation, variant cache, delivery, token estimates).

Imports ``security``, ``schemas``, ``agui``, ``storage``, ``persistence`` and the root modules; never ``runs``
or ``api``.
"""
