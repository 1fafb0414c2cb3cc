import { DomainError } from "../../core/errors.ts";

/** No completed upload has the path a revision names. */
export class UploadNotFound extends DomainError {
  constructor(message: string) {
    super("not_found", message);
  }
}
