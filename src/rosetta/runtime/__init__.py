"""What every command relies on at run time: outputs written without loss
(``outputs``), numbers checked at the boundary (``limits``), devices,
precision, and YAML reading."""
