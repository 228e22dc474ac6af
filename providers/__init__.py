"""Provider SPI and built-in vendors. Imports nothing from ``app``."""
