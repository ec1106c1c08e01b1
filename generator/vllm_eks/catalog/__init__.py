"""Where models and instances come from: the built-in catalogs, the Hugging Face Hub, EC2's API."""
